// The unit of work of the loader: a run of consecutive elements of one top-level array
// (`images`, `annotations` or `categories`), cut out of the file by the stream scanner and
// parsed by simdjson On-Demand into records (BatchResult). Batches are small (about 1 MiB), so
// simdjson's structural index stays small too, whatever the file's size.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dataset/coco/block_arena.h"
#include "dataset/coco/coco.h"

namespace mrcnn::dataset::coco_detail {

enum class Section : uint8_t { kImages, kAnnotations, kCategories };
const char* sectionName(Section section);

// A byte buffer with the zeroed tail simdjson reads past the end of its input.
class PaddedBuffer {
 public:
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Resizes to `size` bytes (contents are kept only up to the old size when it grows).
  void resize(size_t size);

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;  // without the padding
};

struct RawBatch {
  Section section = Section::kAnnotations;
  uint64_t sequence = 0;     // batches are merged in this order: the file's
  uint64_t first_index = 0;  // index in its array of the first element
  uint64_t file_offset = 0;  // file offset of text()[1]
  PaddedBuffer text;         // "[" element "," element ... "]"
};

// Where a record came from, for warnings found after parsing (duplicates, unknown ids).
struct Place {
  uint64_t byte_offset = 0;
  uint64_t element = 0;  // index in its array
};

// The arenas records point into. Each parsing thread fills its own; the dataset adopts them.
struct Arenas {
  BlockArena<double> coordinates;
  BlockArena<uint32_t> counts;
  BlockArena<char> chars;

  void moveTo(Arenas& into) {
    coordinates.moveBlocksTo(into.coordinates);
    counts.moveBlocksTo(into.counts);
    chars.moveBlocksTo(into.chars);
  }
};

struct BatchResult {
  uint64_t sequence = 0;
  std::vector<CocoImage> images;
  std::vector<Place> image_places;
  std::vector<CocoCategory> categories;
  std::vector<Place> category_places;
  // segment_begin is relative to this batch's polygons / rles.
  std::vector<CocoAnnotation> annotations;
  std::vector<Place> annotation_places;
  std::vector<std::span<const double>> polygons;
  std::vector<CocoRle> rles;
  std::vector<CocoWarning> warnings;
  uint64_t warning_count = 0;  // may exceed warnings.size() (max_warnings)

  // Empties the tables but keeps their memory: results are recycled, because fresh vectors
  // for every batch cost a page fault per 4 KiB touched, again and again.
  void clear();
};

class BatchParser {
 public:
  BatchParser(std::string file, size_t max_warnings)
      : file_(std::move(file)), max_warnings_(max_warnings) {}

  // Fills `out` (cleared first). Throws CocoError for malformed JSON and wrong types.
  void parse(RawBatch& batch, Arenas& arenas, BatchResult& out);

 private:
  std::string file_;
  size_t max_warnings_;
  simdjson::ondemand::parser parser_;
};

}  // namespace mrcnn::dataset::coco_detail
