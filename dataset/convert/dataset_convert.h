// dataset_convert: a COCO instances json and its image folder into shard files (shard.h),
// with TAO's `<tag>_warnings.json` and our `<tag>_report.json`. Semantics follow TAO's
// MaskRCNN dataset_convert where it has them:
//  - image i of the json (in file order, the records the reader kept) goes to shard i % N;
//    N is the number of shards asked (TAO's 256), capped at the number of images;
//  - an annotation whose box has a width or height <= 0, or reaches past the image
//    (x + w > width or y + h > height), is a "box" warning and is left out of the records;
//    the reader's annotations skipped for a missing or negative-size bbox join them;
//  - with masks, an annotation whose mask's contours (skimage's find_contours at 0.5) reach
//    beyond its box grown by 1 pixel is a "mask" warning, and stays in the records.
// Beyond TAO, every image file is checked (missing, unreadable, truncated, not decoding, of
// a size other than the json's): such images are left out of the records. Every problem,
// TAO's kinds and the reader's warnings included, is listed in the report with its image
// and annotation id.
//
// Files of the tag are replaced whole (written to temporary names, renamed into place);
// shards of the tag from an earlier conversion with another shard count, and an earlier
// warnings file when this one has no warnings, are removed. Nothing else in the output
// folder is touched; the inputs are only read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mrcnn::dataset {

struct ConvertOptions {
  std::filesystem::path image_dir;
  std::filesystem::path annotations;
  std::filesystem::path output_dir;
  std::string tag;            // empty: the annotation file's name without its extension
  uint32_t num_shards = 256;  // capped at the number of images (at least 1)
  bool include_mask = true;
  unsigned threads = 0;  // image reading and checking; 0: the machine's hardware concurrency
};

// A problem found. kind is snake_case: ours (image_missing, image_unreadable, image_corrupt,
// image_size_mismatch, box_out_of_bounds, bad_bbox, mask_outside_box, bad_mask,
// category_ids_not_from_1) or the COCO reader's warning names (coco.h).
struct ConvertProblem {
  std::string kind;
  std::optional<int64_t> image_id;
  std::optional<int64_t> annotation_id;
  std::string file;  // the image file, for image problems
  std::string message;
};

struct TaoWarning {
  std::vector<int64_t> box;   // annotation ids, ascending
  std::vector<int64_t> mask;  // annotation ids, ascending
};

struct ConvertResult {
  std::string tag;
  uint64_t images_total = 0;  // images the json holds (as the reader kept them)
  uint64_t annotations_total = 0;
  uint64_t images_written = 0;
  uint64_t annotations_written = 0;  // in written images
  uint64_t images_skipped = 0;
  uint64_t annotations_skipped = 0;  // left out: TAO's box rule, bad masks, or their image
  uint64_t shard_bytes = 0;
  std::vector<std::filesystem::path> shards;
  std::filesystem::path warnings_path;  // empty when there was no TAO warning
  std::filesystem::path report_path;
  std::vector<std::filesystem::path> removed;  // stale files of the tag
  // TAO's warnings by image id, in the order of the json's images (unknown images last).
  std::vector<std::pair<int64_t, TaoWarning>> tao_warnings;
  // The reader's warnings in file order, then the conversion's, image by image.
  std::vector<ConvertProblem> problems;
  std::map<std::string, uint64_t> problem_counts;
  double seconds = 0;
};

// The input cannot be used: the image folder is missing, the output folder cannot be
// created, the options are out of range. (A malformed json throws the reader's CocoError.)
class ConvertError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Called as images are done (from the calling thread): images done so far, of total.
using ConvertProgress = std::function<void(uint64_t done, uint64_t total)>;

// Runs the conversion. Throws ConvertError or CocoError on unusable input, ShardError or
// std::runtime_error when writing fails (files already in place are then left as they were).
ConvertResult convertDataset(const ConvertOptions& options, const ConvertProgress& progress = {});

// TAO's default tag: the annotation file's name without its extension.
std::string defaultTag(const std::filesystem::path& annotations);

// TAO's warnings file as Python's json.dump writes it ({"1": {"box": [2], "mask": []}}).
std::string taoWarningsJson(const std::vector<std::pair<int64_t, TaoWarning>>& warnings);
// The report: {"summary": {kind: count}, "problems": [{kind, image_id, annotation_id, file,
// message}]} (ids null when a problem has none).
std::string reportJson(const ConvertResult& result);
// One line per kind for the terminal ("  3 images missing (first: 000000000139.jpg)").
std::vector<std::string> summaryLines(const ConvertResult& result);

}  // namespace mrcnn::dataset
