// dataset_import: a data set in another tool's format (LabelMe, VOC 2012 instance
// segmentation, CVAT for images 1.1, Ultralytics YOLO-seg, COCO) into COCO instances json, one
// file a split, with a report of everything that was changed or left out. Torch-free and
// Qt-free: the engine's `dataset_import` task and the GUI's wizard both call importDataset.
//
// Output in options.output_dir (DIR):
//  - DIR/annotations/instances_<split>.json: COCO; `file_name` is the image where it is,
//    relative to DIR (absolute when no relative path exists), unless copy_images, which copies
//    the images into DIR/images/<split>/ (file_name then "images/<split>/<name>");
//  - DIR/import_report.json: format, whether it was guessed, per split counts, every warning
//    and skip with its file and place;
//  - DIR/images/<split>/: also holds LabelMe images that existed only as `imageData`.
// Everything is written into a sibling temporary folder that is renamed to DIR at the end: a
// fatal error (ImportError) leaves nothing behind, and an existing non-empty DIR is refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mrcnn::dataset::import {

struct ImportOptions {
  std::string format;  // labelme | voc | cvat | yolo | coco; "" = detect from the input
  std::filesystem::path input;
  std::filesystem::path output_dir;
  std::filesystem::path labels;  // optional: one label a line (LabelMe's labels.txt)
  // Fractions by split name, e.g. {{"train", 0.8}, {"val", 0.2}}; empty = everything in
  // "train". Images a format puts in a split of its own (VOC ImageSets, CVAT subsets, YOLO's
  // train/val, COCO files) keep it; only the others are split.
  std::vector<std::pair<std::string, double>> split;
  uint64_t seed = 0;
  bool copy_images = false;
  unsigned threads = 0;  // file reading and mask work; 0 = the machine's hardware concurrency
};

// A warning (the data was kept, changed) or a skip (something was left out).
struct ImportProblem {
  std::string code;     // snake_case: polygon_too_few_points, image_missing, ...
  std::string file;     // the file at fault (annotation file, or image file)
  std::string place;    // where in it: "shape 3", "line 7", "image 12", "byte 1234"; may be ""
  std::string message;  // what happened and what was done about it
};

struct SplitCounts {
  uint64_t images = 0;
  uint64_t instances = 0;
  std::map<std::string, uint64_t> instances_per_class;  // by category name
};

struct ImportSummary {
  std::string format;
  bool format_guessed = false;
  std::filesystem::path input;
  std::filesystem::path output_dir;
  std::vector<std::string> categories;         // category id i + 1 is categories[i]
  std::map<std::string, SplitCounts> splits;   // by split name
  uint64_t images_skipped = 0;
  uint64_t instances_skipped = 0;
  std::vector<ImportProblem> warnings;
  std::vector<ImportProblem> skipped;
  std::vector<std::filesystem::path> written;  // final paths of the files written
  double seconds = 0;
};

// The input cannot be imported; what() names the file and the place in it
// ("a.json: line 3, column 7: malformed JSON: ...") and what to do.
class ImportError : public std::runtime_error {
 public:
  ImportError(std::string file, std::string place, const std::string& message)
      : std::runtime_error(file + (place.empty() ? "" : ": " + place) + ": " + message),
        file_(std::move(file)),
        place_(std::move(place)) {}
  const std::string& file() const { return file_; }
  const std::string& place() const { return place_; }

 private:
  std::string file_;
  std::string place_;
};

// Runs the import. Throws ImportError on input that cannot be imported (nothing is then
// written) and std::runtime_error / std::filesystem::filesystem_error when writing fails.
// `progress` receives short lines ("read 2000 of 10000 files") from the calling thread.
ImportSummary importDataset(const ImportOptions& options,
                            const std::function<void(const std::string&)>& progress = {});

// The printed summary: format, images and instances per split and class, what was skipped
// and why, each with its file and place (the first few of a kind, then a count).
std::string formatSummary(const ImportSummary& summary);

// "train=0.8,val=0.2" into out; the error text, or nullopt when it parsed. Fractions must be
// positive and add up to 1 (within 1e-6); names are letters, digits, '_' and '-'.
std::optional<std::string> parseSplit(const std::string& text,
                                      std::vector<std::pair<std::string, double>>* out);

// The format the input looks like (labelme, voc, cvat, yolo, coco), or nullopt.
std::optional<std::string> detectFormat(const std::filesystem::path& input);

}  // namespace mrcnn::dataset::import
