// What the New Experiment wizard knows of a data set once it is imported: the import's
// summary, the annotation files it wrote (which split trains, which validates), the dataset
// check of those files (dataset/stats, the Statistics tab's content) and what the check
// suggests for the spec: an input canvas from the image sizes and an anchor aspect pair when
// the default anchors miss too many boxes. Plain data and no Qt, so that the suggestions are
// tested without widgets and computed off the UI thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/import/import.h"
#include "dataset/stats/dataset_stats.h"

namespace mrcnn::ui {

struct ImportedData {
  dataset::import::ImportSummary summary;
  std::filesystem::path dataset_dir;   // the import's output folder: file_name is relative to it
  std::string train_split, val_split;  // split names; val_split "" when there is none
  std::filesystem::path train_json, val_json;
  int64_t train_images = 0, val_images = 0;
  // The check of the written files (sets: train, then val when there is one), with the anchors
  // below on the suggested canvas.
  dataset::DatasetStats stats;
  dataset::AnchorCoverageOptions anchors;
  int image_height = 0, image_width = 0;  // the suggested fixed canvas: multiples of 64
  // The aspect pair the check suggests adding to the default anchors; none when they cover
  // enough boxes already (the check's own threshold: 90 %).
  std::optional<std::pair<double, double>> suggested_pair;

  const dataset::SetStats* trainStats() const {
    return stats.sets.empty() ? nullptr : &stats.sets.front();
  }
};

// The canvas (height, width) for images of these sizes: the median width and height, scaled
// down to fit TAO's 832x1344 canvas (either orientation) and rounded up to multiples of
// 2^max_level = 64, at least 128. (w, h) pairs with their image counts, as SetStats has them.
std::pair<int, int> suggestedCanvas(
    const std::vector<std::pair<std::pair<uint32_t, uint32_t>, int64_t>>& sizes);

// Which of the written splits trains and which validates: "train" (else the largest) trains;
// "val", "valid", "validation" or "test" (else any other) validates.
std::pair<std::string, std::string> chooseSplits(const dataset::import::ImportSummary& summary);

// Reads the annotation files the import wrote and checks them. Throws std::exception (a COCO
// error names the file and the byte) when a written file cannot be read back.
ImportedData examineImport(dataset::import::ImportSummary summary);

}  // namespace mrcnn::ui
