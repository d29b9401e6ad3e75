// The shard files dataset_convert writes and the data loader reads: images as their encoded
// file bytes with their annotations decoded (instance masks as RLEs at the image's size), so
// that reading a record never parses json nor rasterises a polygon. A shard is
// self-describing (categories in its header), every record is checksummed, and a footer
// index lets a reader seek any record (the loader shuffles).
//
// Layout, version 1. Integers are little-endian, doubles IEEE-754 binary64 little-endian;
// "varint" is LEB128 (7 bits a byte, low bits first), at most 5 bytes for a u32.
//
//   Header, at offset 0:
//     char[8]  magic "MRCNNSHD"
//     u32      version (1)
//     u32      header size H, in bytes, the CRC below included
//     u32      shard index (0-based), u32 shard count
//     u32      flags: bit 0 = the records carry instance masks
//     u32      category count C
//     C times  i64 category id, u32 name size, name bytes (UTF-8); category k (0-based) has
//              the contiguous label k + 1, 0 being the background
//     u32      CRC-32C of the H - 4 bytes before it
//   Records, from offset H, one after the other; each:
//     u32      payload size P
//     u32      CRC-32C of the payload
//     P bytes  payload:
//       i64      image id
//       u32      width, u32 height: the image's size; its file decodes to exactly this size
//                (dataset_convert leaves out images whose file disagrees with the json) when
//                EXIF orientation is ignored (cv::IMREAD_IGNORE_ORIENTATION), as COCO sizes are
//       u32      file name size, file name bytes (as in the COCO json)
//       u64      image size in bytes, then the bytes of the image file, not re-encoded
//       u32      annotation count A
//       A times  i64 annotation id, i64 category id (as in the json), u32 label,
//                u8 iscrowd, f64 bbox x, y, w, h (as in the json), f64 area (as in the json;
//                NaN when it had none),
//                and when the masks flag is set: varint run count R, R varint runs of the
//                mask at width x height, column-major, starting with a run of zeros
//                (dataset/mask/rle.h); the runs add up to width * height
//   Index, at the index offset: u64 offset of each record (its payload-size field), in order
//   Trailer, the last 32 bytes of the file:
//     u64      index offset, u64 record count N,
//     u32      CRC-32C of the index, u32 CRC-32C of the 20 trailer bytes before it,
//     char[8]  magic "MRCNNEND"
//
// A file without its trailer (a writer killed mid-way) is refused as a whole; dataset_convert
// writes under a temporary name and renames, so that does not happen to a finished shard.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataset/mask/rle.h"

namespace mrcnn::dataset {

inline constexpr uint32_t kShardVersion = 1;

struct ShardCategory {
  int64_t id = 0;
  std::string name;

  friend bool operator==(const ShardCategory&, const ShardCategory&) = default;
};

struct ShardAnnotation {
  int64_t id = 0;
  int64_t category_id = 0;
  uint32_t label = 0;  // contiguous, 1..C
  bool iscrowd = false;
  std::array<double, 4> bbox{};  // x, y, w, h
  double area = 0;
  Rle mask;  // h x w of the image; empty (0 x 0) when the shard carries no masks
};

struct ShardRecord {
  int64_t image_id = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  std::string file_name;
  std::vector<uint8_t> image_bytes;  // the encoded file (JPEG, PNG...) as it was
  std::vector<ShardAnnotation> annotations;
};

struct ShardInfo {
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  bool has_masks = true;
  std::vector<ShardCategory> categories;
};

// What is wrong with a shard file; what() names the file and, for a record, its index.
class ShardError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appends a record's payload to `out` (no size, no checksum: ShardWriter adds them). Encoding
// is separate from writing so that worker threads can do it. Throws std::invalid_argument
// when a mask is not width x height while masks are on.
void encodeShardRecord(const ShardRecord& record, bool with_masks, std::string& out);

// The standard name of shard `index` of `count`: "<tag>-00003-of-00016", as TAO names them.
std::string shardFileName(const std::string& tag, uint32_t index, uint32_t count);

// Writes one shard to a temporary name beside `path` (".<name>.tmp"); finish() completes and
// flushes it to disk, commit() renames it into place. Destroyed before commit(), it removes
// the temporary file. Errors throw ShardError naming the file and the system's reason.
class ShardWriter {
 public:
  ShardWriter(std::filesystem::path path, const ShardInfo& info);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void add(const ShardRecord& record);
  // A payload made by encodeShardRecord (with this shard's masks flag).
  void addEncoded(std::string_view payload);
  void finish();
  void commit();

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporaryPath() const { return temp_; }
  uint64_t recordCount() const { return offsets_.size(); }
  uint64_t bytesWritten() const { return position_; }

 private:
  void write(const void* data, size_t size);

  std::filesystem::path path_;
  std::filesystem::path temp_;
  bool has_masks_ = true;
  int fd_ = -1;
  uint64_t position_ = 0;
  std::vector<uint64_t> offsets_;
  bool finished_ = false;
  bool committed_ = false;
};

// Reads a shard. Opening checks the header and the trailer, and loads the index; read()
// checks the record's checksum and its structure, so a damaged file gives a ShardError
// naming the file and the record, never a crash nor a wrong mask. read() may be called from
// several threads at once (positioned reads on one descriptor).
class ShardReader {
 public:
  explicit ShardReader(std::filesystem::path path);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  size_t size() const { return offsets_.size(); }
  const ShardInfo& info() const { return info_; }
  const std::filesystem::path& path() const { return path_; }

  ShardRecord read(size_t index) const;
  // The same into an existing record, reusing its buffers.
  void read(size_t index, ShardRecord& out) const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void failRecord(size_t index, const std::string& what) const;
  void readAt(uint64_t offset, void* data, size_t size) const;

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint64_t index_offset_ = 0;
  ShardInfo info_;
  std::vector<uint64_t> offsets_;
};

}  // namespace mrcnn::dataset
