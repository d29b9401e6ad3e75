// The common in-memory model every reader fills and the COCO writer reads: images,
// instances with their geometry (polygons, an RLE mask, or a box alone), attributes, the
// label names the format declares and the split a format gives an image.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dataset/import/import.h"
#include "dataset/mask/rle.h"

namespace mrcnn::dataset::import {

struct ImportedImage {
  std::filesystem::path path;  // where the image file is (or should be), absolute
  std::string source;          // the annotation file that names it, for messages
  uint32_t width = 0;          // 0: unknown, read from the file's header
  uint32_t height = 0;
  std::string split;           // the format's own split; "" when it gives none
  // LabelMe's `imageData`: the encoded image, written out when `path` does not exist.
  std::string embedded;
};

// An attribute kept in the annotation's "attributes" object, typed as JSON.
struct Attribute {
  enum class Kind : uint8_t { kString, kNumber, kBool };
  std::string name;
  std::string text;  // kString: the value; kNumber: its decimal text; kBool: "true"/"false"
  Kind kind = Kind::kString;
};

struct ImportedInstance {
  uint32_t image = 0;  // index into ImportedDataset::images
  std::string label;
  std::vector<Polygon> polygons;   // pixel coordinates, x0 y0 x1 y1 ...
  std::optional<Rle> mask;         // at the image's size; with polygons, the two are merged
  std::optional<Box> box;          // x y w h: the box of a box-only instance
  bool iscrowd = false;
  // COCO input: the file's own bbox and area, kept as they are (COCO's crowd boxes are one
  // pixel narrower than their masks' extent; a COCO-to-COCO import must not change them).
  std::optional<Box> given_bbox;
  std::optional<double> given_area;
  std::vector<Attribute> attributes;
  std::string file;   // annotation file and place, for messages
  std::string place;  // "shape 3", "line 7"...
};

// Where readers report: thread-safe, since files are read in parallel.
class ProblemLog {
 public:
  void warn(std::string code, std::string file, std::string place, std::string message) {
    std::lock_guard lock(mutex_);
    warnings_.push_back({std::move(code), std::move(file), std::move(place), std::move(message)});
  }
  void skip(std::string code, std::string file, std::string place, std::string message) {
    std::lock_guard lock(mutex_);
    skipped_.push_back({std::move(code), std::move(file), std::move(place), std::move(message)});
  }
  std::vector<ImportProblem>& warnings() { return warnings_; }
  std::vector<ImportProblem>& skipped() { return skipped_; }

 private:
  std::mutex mutex_;
  std::vector<ImportProblem> warnings_;
  std::vector<ImportProblem> skipped_;
};

struct ImportedDataset {
  std::vector<ImportedImage> images;
  std::vector<ImportedInstance> instances;
  // Labels the format declares (CVAT's meta, YOLO's names, VOC's class list, COCO's
  // categories): categories even when no instance uses them. Empty for LabelMe.
  std::vector<std::string> declared_labels;
};

// What every reader is given.
struct ReadContext {
  std::filesystem::path input;
  unsigned threads = 1;
  ProblemLog* log = nullptr;
  const std::function<void(const std::string&)>* progress = nullptr;
  void report(const std::string& line) const {
    if (progress && *progress) (*progress)(line);
  }
};

ImportedDataset readLabelMe(const ReadContext& context);
ImportedDataset readVoc(const ReadContext& context);
ImportedDataset readCvat(const ReadContext& context);
ImportedDataset readYolo(const ReadContext& context);
ImportedDataset readCoco(const ReadContext& context);

}  // namespace mrcnn::dataset::import
