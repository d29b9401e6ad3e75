// Reads a JSON file front to back through a window of a few MB and finds the boundaries of
// values without parsing them: enough to walk the top-level object and to cut its big arrays
// into batches of whole elements for simdjson. The whole file is never in memory at once, and
// neither is a structural index of it (simdjson's is 4 bytes per comma, bracket and number:
// about the file's size again for COCO's polygon lists).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "dataset/coco/coco_batch.h"

namespace mrcnn::dataset::coco_detail {

class BatchSink {
 public:
  virtual ~BatchSink() = default;
  virtual PaddedBuffer acquire() = 0;         // an empty buffer to fill (recycled)
  virtual void submit(RawBatch&& batch) = 0;  // ownership passes
};

class JsonStream {
 public:
  // Throws CocoError when the file cannot be opened. `display` names it in messages.
  JsonStream(const std::filesystem::path& path, std::string display);
  ~JsonStream();
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;

  const std::string& display() const { return display_; }
  uint64_t fileSize() const { return file_size_; }
  uint64_t offset() const { return window_offset_ + pos_; }  // of the cursor, in the file

  // Skips whitespace; the next byte without consuming it, or -1 at the end of the file.
  int peek();
  void advance() { ++pos_; }  // consumes the byte peek() returned

  // Names the value at the cursor in messages: `prefix[index]`, or `prefix` when index < 0.
  void setPath(std::string prefix, int64_t index = -1) {
    path_prefix_ = std::move(prefix);
    path_index_ = index;
  }
  std::string path() const;

  // The raw (still escaped) text of the string whose opening quote is at the cursor.
  std::string readString();
  // Moves past the value at the cursor. Only strings and brackets are checked, so `validate`
  // gets the value's exact bytes and its offset, when given.
  using Validator = void (*)(const JsonStream&, std::string_view text, uint64_t offset);
  void skipValue(Validator validate);
  // Cuts the array whose '[' is at the cursor into batches of whole elements of about
  // `batch_bytes` (sequence numbers from `sequence` on, which it advances); elements must be
  // objects. Moves past the closing ']'.
  void streamArray(Section section, size_t batch_bytes, BatchSink& sink, uint64_t& sequence);

  [[noreturn]] void fail(uint64_t offset, const std::string& path, const std::string& reason) const;
  [[noreturn]] void truncated() const;  // at the end of the file, with path()
  // What a value starting with byte c is, for messages: "an array", "a string", "'h'"...
  static std::string describeStart(int c);

 private:
  bool refill();         // false at the end of the file
  void scanValue();      // cursor at a value's first byte
  void scanString();     // cursor after the opening quote
  void scanContainer();  // cursor at '[' or '{'

  std::string display_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  PaddedBuffer window_;
  size_t end_ = 0;              // valid bytes in the window
  size_t pos_ = 0;              // cursor in the window
  uint64_t window_offset_ = 0;  // file offset of window_.data()[0]
  // Bytes from this file offset on must stay in the window (the batch being gathered).
  uint64_t keep_from_ = UINT64_MAX;
  bool eof_ = false;
  std::string path_prefix_;
  int64_t path_index_ = -1;
  std::string brackets_;  // open brackets of the value being scanned
};

}  // namespace mrcnn::dataset::coco_detail
