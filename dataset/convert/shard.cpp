#include "dataset/convert/shard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "dataset/convert/crc32c.h"
#include "io/write_error.h"

static_assert(std::endian::native == std::endian::little,
              "the shard format is little-endian and read with memcpy");

namespace mrcnn::dataset {
namespace {

constexpr char kMagic[8] = {'M', 'R', 'C', 'N', 'N', 'S', 'H', 'D'};
constexpr char kEndMagic[8] = {'M', 'R', 'C', 'N', 'N', 'E', 'N', 'D'};
constexpr size_t kTrailerSize = 32;
constexpr uint32_t kFlagMasks = 1;
// Header fields before the categories: magic, version, size, index, count, flags, C.
constexpr size_t kHeaderFixed = 8 + 6 * 4;

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void putVarint(std::string& out, uint32_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void putString(std::string& out, std::string_view s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Bounds-checked reading of a payload; a failure names the field it was reading.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  template <typename T>
  T get(const char* field) {
    need(sizeof(T), field);
    T value;
    std::memcpy(&value, p_, sizeof(T));
    p_ += sizeof(T);
    return value;
  }
  uint32_t varint(const char* field) {
    uint32_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      need(1, field);
      const uint8_t b = *p_++;
      if (shift == 28 && (b & 0xF0) != 0)
        throw std::runtime_error(std::string(field) + " overflows");
      v |= uint32_t{b & 0x7Fu} << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::runtime_error(std::string(field) + " overflows");
  }
  const uint8_t* bytes(uint64_t n, const char* field) {
    need(n, field);
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  void need(uint64_t n, const char* field) const {
    if (n > left()) throw std::runtime_error(std::string("cut short in ") + field);
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

std::string systemError(int error) {
  return std::strerror(error);
}

}  // namespace

void encodeShardRecord(const ShardRecord& r, bool with_masks, std::string& out) {
  put<int64_t>(out, r.image_id);
  put<uint32_t>(out, r.width);
  put<uint32_t>(out, r.height);
  putString(out, r.file_name);
  put<uint64_t>(out, r.image_bytes.size());
  out.append(reinterpret_cast<const char*>(r.image_bytes.data()), r.image_bytes.size());
  put<uint32_t>(out, static_cast<uint32_t>(r.annotations.size()));
  for (const ShardAnnotation& a : r.annotations) {
    put<int64_t>(out, a.id);
    put<int64_t>(out, a.category_id);
    put<uint32_t>(out, a.label);
    put<uint8_t>(out, a.iscrowd ? 1 : 0);
    for (double v : a.bbox)
      put<double>(out, v);
    put<double>(out, a.area);
    if (!with_masks) continue;
    if (a.mask.h != r.height || a.mask.w != r.width) {
      throw std::invalid_argument("annotation " + std::to_string(a.id) + ": mask of " +
                                  std::to_string(a.mask.h) + "x" + std::to_string(a.mask.w) +
                                  ", image of " + std::to_string(r.height) + "x" +
                                  std::to_string(r.width));
    }
    putVarint(out, static_cast<uint32_t>(a.mask.counts.size()));
    for (uint32_t c : a.mask.counts)
      putVarint(out, c);
  }
}

std::string shardFileName(const std::string& tag, uint32_t index, uint32_t count) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u", index, count);
  return tag + suffix;
}

// ---- ShardWriter ----

ShardWriter::ShardWriter(std::filesystem::path path, const ShardInfo& info)
    : path_(std::move(path)), has_masks_(info.has_masks) {
  temp_ = path_.parent_path() / ("." + path_.filename().string() + ".tmp");
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw ShardError(temp_.string() + ": cannot create: " + systemError(errno));
  std::string header(kMagic, sizeof kMagic);
  put<uint32_t>(header, kShardVersion);
  put<uint32_t>(header, 0);  // the size, filled in below
  put<uint32_t>(header, info.shard_index);
  put<uint32_t>(header, info.shard_count);
  put<uint32_t>(header, info.has_masks ? kFlagMasks : 0);
  put<uint32_t>(header, static_cast<uint32_t>(info.categories.size()));
  for (const ShardCategory& c : info.categories) {
    put<int64_t>(header, c.id);
    putString(header, c.name);
  }
  const auto size = static_cast<uint32_t>(header.size() + 4);
  std::memcpy(header.data() + 12, &size, 4);
  put<uint32_t>(header, crc32c(header.data(), header.size()));
  write(header.data(), header.size());
}

ShardWriter::~ShardWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void ShardWriter::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;  // a short write to a regular file: out of space
      if (io::isDiskFull(err)) throw io::DiskFullError(path_, position_ + left, err);
      throw ShardError(temp_.string() + ": cannot write: " + systemError(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  position_ += size;
}

void ShardWriter::add(const ShardRecord& record) {
  std::string payload;
  encodeShardRecord(record, has_masks_, payload);
  addEncoded(payload);
}

void ShardWriter::addEncoded(std::string_view payload) {
  if (finished_) throw std::logic_error("ShardWriter::add after finish");
  if (payload.size() > std::numeric_limits<uint32_t>::max()) {
    throw ShardError(path_.string() + ": record " + std::to_string(offsets_.size()) + " of " +
                     std::to_string(payload.size()) + " bytes: records are limited to 4 GiB");
  }
  offsets_.push_back(position_);
  std::string prefix;
  put<uint32_t>(prefix, static_cast<uint32_t>(payload.size()));
  put<uint32_t>(prefix, crc32c(payload.data(), payload.size()));
  write(prefix.data(), prefix.size());
  write(payload.data(), payload.size());
}

void ShardWriter::finish() {
  if (finished_) return;
  const uint64_t index_offset = position_;
  std::string index;
  index.reserve(offsets_.size() * 8);
  for (uint64_t o : offsets_)
    put<uint64_t>(index, o);
  std::string trailer;
  put<uint64_t>(trailer, index_offset);
  put<uint64_t>(trailer, offsets_.size());
  put<uint32_t>(trailer, crc32c(index.data(), index.size()));
  put<uint32_t>(trailer, crc32c(trailer.data(), trailer.size()));
  trailer.append(kEndMagic, sizeof kEndMagic);
  write(index.data(), index.size());
  write(trailer.data(), trailer.size());
  if (::fsync(fd_) != 0) throw ShardError(temp_.string() + ": cannot flush: " + systemError(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw ShardError(temp_.string() + ": cannot close: " + systemError(errno));
  }
  fd_ = -1;
  finished_ = true;
}

void ShardWriter::commit() {
  finish();
  if (committed_) return;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    throw ShardError(path_.string() + ": cannot rename " + temp_.filename().string() +
                     " into place: " + systemError(errno));
  }
  committed_ = true;
}

// ---- ShardReader ----

ShardReader::ShardReader(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail("cannot open: " + systemError(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail("cannot stat: " + systemError(errno));
  file_size_ = static_cast<uint64_t>(st.st_size);

  if (file_size_ < kHeaderFixed + 4 + kTrailerSize) fail("too short to be a shard");
  std::string fixed(kHeaderFixed, '\0');
  readAt(0, fixed.data(), fixed.size());
  if (std::memcmp(fixed.data(), kMagic, sizeof kMagic) != 0) {
    fail("not a shard file (bad magic)");
  }
  uint32_t version = 0, header_size = 0, flags = 0, categories = 0;
  std::memcpy(&version, fixed.data() + 8, 4);
  std::memcpy(&header_size, fixed.data() + 12, 4);
  std::memcpy(&info_.shard_index, fixed.data() + 16, 4);
  std::memcpy(&info_.shard_count, fixed.data() + 20, 4);
  std::memcpy(&flags, fixed.data() + 24, 4);
  std::memcpy(&categories, fixed.data() + 28, 4);
  if (version != kShardVersion) {
    fail("shard format version " + std::to_string(version) + ", this build reads version " +
         std::to_string(kShardVersion) + "; convert the dataset again");
  }
  if (header_size < kHeaderFixed + 4 || header_size > file_size_ - kTrailerSize) {
    fail("corrupt header (size " + std::to_string(header_size) + ")");
  }
  std::string header(header_size, '\0');
  readAt(0, header.data(), header.size());
  uint32_t stored = 0;
  std::memcpy(&stored, header.data() + header_size - 4, 4);
  if (crc32c(header.data(), header_size - 4) != stored) fail("corrupt header (checksum mismatch)");
  info_.has_masks = (flags & kFlagMasks) != 0;
  try {
    Cursor c(reinterpret_cast<const uint8_t*>(header.data()) + kHeaderFixed,
             header_size - kHeaderFixed - 4);
    for (uint32_t k = 0; k < categories; ++k) {
      ShardCategory category;
      category.id = c.get<int64_t>("category id");
      const auto n = c.get<uint32_t>("category name size");
      const uint8_t* name = c.bytes(n, "category name");
      category.name.assign(reinterpret_cast<const char*>(name), n);
      info_.categories.push_back(std::move(category));
    }
  } catch (const std::runtime_error& e) {
    fail(std::string("corrupt header: ") + e.what());
  }

  char trailer[kTrailerSize];
  readAt(file_size_ - kTrailerSize, trailer, kTrailerSize);
  if (std::memcmp(trailer + 24, kEndMagic, sizeof kEndMagic) != 0) {
    fail("no trailer (the file is incomplete: was its conversion interrupted?)");
  }
  uint64_t count = 0;
  uint32_t index_crc = 0, trailer_crc = 0;
  std::memcpy(&index_offset_, trailer, 8);
  std::memcpy(&count, trailer + 8, 8);
  std::memcpy(&index_crc, trailer + 16, 4);
  std::memcpy(&trailer_crc, trailer + 20, 4);
  if (crc32c(trailer, 20) != trailer_crc) fail("corrupt trailer (checksum mismatch)");
  if (index_offset_ < header_size || index_offset_ > file_size_ - kTrailerSize ||
      (file_size_ - kTrailerSize - index_offset_) / 8 != count ||
      (file_size_ - kTrailerSize - index_offset_) % 8 != 0) {
    fail("corrupt trailer (index of " + std::to_string(count) + " records at byte " +
         std::to_string(index_offset_) + " does not fit the file)");
  }
  offsets_.resize(count);
  readAt(index_offset_, offsets_.data(), count * 8);
  if (crc32c(offsets_.data(), count * 8) != index_crc) fail("corrupt index (checksum mismatch)");
  for (size_t i = 0; i < count; ++i) {
    const uint64_t limit = i + 1 < count ? offsets_[i + 1] : index_offset_;
    if (offsets_[i] < header_size || offsets_[i] + 8 > limit) {
      fail("corrupt index (record " + std::to_string(i) + " at byte " +
           std::to_string(offsets_[i]) + ")");
    }
  }
}

ShardReader::~ShardReader() {
  if (fd_ >= 0) ::close(fd_);
}

void ShardReader::fail(const std::string& what) const {
  throw ShardError(path_.string() + ": " + what);
}

void ShardReader::failRecord(size_t index, const std::string& what) const {
  throw ShardError(path_.string() + ": record " + std::to_string(index) + " (at byte " +
                   std::to_string(offsets_[index]) + "): " + what +
                   "; the shard is damaged: convert the dataset again");
}

void ShardReader::readAt(uint64_t offset, void* data, size_t size) const {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read at byte " + std::to_string(offset) + ": " + systemError(errno));
    if (n == 0) fail("unexpected end of file at byte " + std::to_string(offset));
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
}

ShardRecord ShardReader::read(size_t index) const {
  ShardRecord record;
  read(index, record);
  return record;
}

void ShardReader::read(size_t index, ShardRecord& out) const {
  if (index >= offsets_.size()) {
    throw std::out_of_range(path_.string() + ": record " + std::to_string(index) +
                            " asked, the shard holds " + std::to_string(offsets_.size()));
  }
  const uint64_t at = offsets_[index];
  const uint64_t limit = index + 1 < offsets_.size() ? offsets_[index + 1] : index_offset_;
  uint32_t prefix[2];
  readAt(at, prefix, 8);
  const uint32_t size = prefix[0];
  if (at + 8 + size != limit) {
    failRecord(index,
               "its size field (" + std::to_string(size) + " bytes) disagrees with the index");
  }
  // The payload goes to a thread-local buffer: the image bytes are copied out once checked.
  thread_local std::vector<uint8_t> payload;
  payload.resize(size);
  readAt(at + 8, payload.data(), size);
  const uint32_t crc = crc32c(payload.data(), size);
  if (crc != prefix[1]) {
    char hex[64];
    std::snprintf(hex, sizeof hex, "stored 0x%08x, computed 0x%08x", prefix[1], crc);
    failRecord(index, std::string("checksum mismatch (") + hex + ")");
  }
  try {
    Cursor c(payload.data(), payload.size());
    out.image_id = c.get<int64_t>("image id");
    out.width = c.get<uint32_t>("width");
    out.height = c.get<uint32_t>("height");
    const auto name_size = c.get<uint32_t>("file name size");
    const uint8_t* name = c.bytes(name_size, "file name");
    out.file_name.assign(reinterpret_cast<const char*>(name), name_size);
    const auto image_size = c.get<uint64_t>("image size");
    const uint8_t* image = c.bytes(image_size, "image bytes");
    out.image_bytes.assign(image, image + image_size);
    const auto count = c.get<uint32_t>("annotation count");
    // Each annotation takes at least 61 bytes: a corrupt count cannot allocate wildly.
    if (count > c.left() / 61)
      throw std::runtime_error("annotation count " + std::to_string(count) + " too large");
    out.annotations.resize(count);
    const uint64_t pixels = uint64_t{out.width} * out.height;
    for (uint32_t k = 0; k < count; ++k) {
      ShardAnnotation& a = out.annotations[k];
      a.id = c.get<int64_t>("annotation id");
      a.category_id = c.get<int64_t>("category id");
      a.label = c.get<uint32_t>("label");
      a.iscrowd = c.get<uint8_t>("iscrowd") != 0;
      for (double& v : a.bbox)
        v = c.get<double>("bbox");
      a.area = c.get<double>("area");
      a.mask.counts.clear();
      if (!info_.has_masks) {
        a.mask.h = a.mask.w = 0;
        continue;
      }
      a.mask.h = out.height;
      a.mask.w = out.width;
      const uint32_t runs = c.varint("mask run count");
      if (runs > c.left())
        throw std::runtime_error("mask run count " + std::to_string(runs) + " too large");
      a.mask.counts.resize(runs);
      uint64_t sum = 0;
      for (uint32_t& run : a.mask.counts) {
        run = c.varint("mask runs");
        sum += run;
      }
      if (sum != pixels) {
        throw std::runtime_error("mask of annotation " + std::to_string(a.id) + " covers " +
                                 std::to_string(sum) + " pixels, not " + std::to_string(pixels));
      }
    }
    if (c.left() != 0) throw std::runtime_error(std::to_string(c.left()) + " bytes left over");
  } catch (const std::runtime_error& e) {
    failRecord(index, e.what());
  }
}

}  // namespace mrcnn::dataset
