#include "dataset/coco/json_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mrcnn::dataset::coco_detail {
namespace {

constexpr size_t kMaxWindow = size_t{16} << 20;

bool isSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The scanner's inner loops: most of a COCO file is digits and commas, which these skip 16
// bytes at a time. They may read up to 15 bytes past `end` (the window has padding there) and
// return `end` when nothing is found.
#if defined(__SSE2__)
const char* firstMatch(const char* p, __m128i hits, const char* end) {
  const auto mask = static_cast<unsigned>(_mm_movemask_epi8(hits));
  if (mask == 0) return nullptr;
  const char* hit = p + __builtin_ctz(mask);
  return hit < end ? hit : end;
}

// The first '"' or '\\'.
const char* findStringEnd(const char* p, const char* end) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; p < end; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
    if (const char* hit = firstMatch(p, m, end)) return hit;
  }
  return end;
}

// The first '"', '[', ']', '{' or '}'. Setting bit 0x20 maps '[' to '{' and ']' to '}'
// (and no other byte to them), so three comparisons do.
const char* findBracketOrQuote(const char* p, const char* end) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i bit = _mm_set1_epi8(0x20);
  for (; p < end; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i folded = _mm_or_si128(v, bit);
    const __m128i m =
        _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                     _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)));
    if (const char* hit = firstMatch(p, m, end)) return hit;
  }
  return end;
}
#else
const char* findStringEnd(const char* p, const char* end) {
  while (p < end && *p != '"' && *p != '\\')
    ++p;
  return p;
}

const char* findBracketOrQuote(const char* p, const char* end) {
  while (p < end && *p != '"' && (*p | 0x20) != '{' && (*p | 0x20) != '}')
    ++p;
  return p;
}
#endif

}  // namespace

JsonStream::JsonStream(const std::filesystem::path& path, std::string display)
    : display_(std::move(display)) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw CocoError(display_, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int error = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd_);
    throw CocoError(display_, std::string("cannot read: ") + std::strerror(error));
  }
  file_size_ = static_cast<uint64_t>(st.st_size);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  window_.resize(std::clamp<size_t>(file_size_, 4096, kMaxWindow));
}

JsonStream::~JsonStream() {
  ::close(fd_);
}

std::string JsonStream::path() const {
  if (path_index_ < 0) return path_prefix_;
  return path_prefix_ + "[" + std::to_string(path_index_) + "]";
}

void JsonStream::fail(uint64_t offset, const std::string& path, const std::string& reason) const {
  throw CocoError(display_, offset, path, reason);
}

void JsonStream::truncated() const {
  fail(file_size_, path(), "unexpected end of file (is the file truncated?)");
}

std::string JsonStream::describeStart(int c) {
  if (c < 0) return "the end of the file";
  switch (c) {
    case '{':
      return "an object";
    case '[':
      return "an array";
    case '"':
      return "a string";
    case 't':
    case 'f':
      return "a boolean";
    case 'n':
      return "null";
    default:
      break;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return "a number";
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(c & 0xff));
  return std::string("byte ") + hex;
}

bool JsonStream::refill() {
  if (eof_) return false;
  // Drop what is no longer needed, keep the rest at the front.
  const size_t start = static_cast<size_t>(std::min(keep_from_, offset()) - window_offset_);
  if (start > 0) {
    std::memmove(window_.data(), window_.data() + start, end_ - start);
    end_ -= start;
    pos_ -= start;
    window_offset_ += start;
  }
  if (end_ == window_.size()) window_.resize(2 * window_.size());  // one value fills it
  ssize_t n = 0;
  do {
    n = ::read(fd_, window_.data() + end_, window_.size() - end_);
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw CocoError(display_, std::string("read failed: ") + std::strerror(errno));
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<size_t>(n);
  return true;
}

int JsonStream::peek() {
  for (;;) {
    const char* b = window_.data();
    while (pos_ < end_) {
      if (!isSpace(b[pos_])) return static_cast<unsigned char>(b[pos_]);
      ++pos_;
    }
    if (!refill()) return -1;
  }
}

std::string JsonStream::readString() {
  advance();  // the opening quote
  std::string text;
  for (;;) {
    while (pos_ < end_) {
      const char c = window_.data()[pos_++];
      if (c == '"') return text;
      text += c;
      if (c == '\\') {
        if (pos_ == end_ && !refill()) truncated();
        text += window_.data()[pos_++];
      }
    }
    if (!refill()) truncated();
  }
}

void JsonStream::scanString() {
  for (;;) {
    const char* b = window_.data();
    pos_ = static_cast<size_t>(findStringEnd(b + pos_, b + end_) - b);
    if (pos_ < end_) {
      if (b[pos_] == '"') {
        ++pos_;
        return;
      }
      if (pos_ + 1 < end_) {  // a backslash and the byte it escapes
        pos_ += 2;
        continue;
      }
    }
    if (!refill()) truncated();
  }
}

void JsonStream::scanContainer() {
  brackets_.clear();
  for (;;) {
    const char* b = window_.data();
    pos_ = static_cast<size_t>(findBracketOrQuote(b + pos_, b + end_) - b);
    if (pos_ == end_) {
      if (!refill()) truncated();
      continue;
    }
    const char c = b[pos_++];
    if (c == '"') {
      scanString();
    } else if (c == '[' || c == '{') {
      brackets_ += c;
    } else {
      if (brackets_.back() != (c == ']' ? '[' : '{')) {
        fail(offset() - 1, path(),
             std::string("malformed JSON: '") + c + "' closes '" + brackets_.back() + "'");
      }
      brackets_.pop_back();
      if (brackets_.empty()) return;
    }
  }
}

void JsonStream::scanValue() {
  const int c = peek();
  if (c < 0) truncated();
  if (c == '"') {
    advance();
    scanString();
  } else if (c == '[' || c == '{') {
    scanContainer();
  } else if (c == ',' || c == ':' || c == ']' || c == '}') {
    fail(offset(), path(), "malformed JSON: expected a value, got " + describeStart(c));
  } else {
    for (;;) {  // a number, true, false or null: up to the next delimiter
      const char* b = window_.data();
      while (pos_ < end_) {
        const char d = b[pos_];
        if (d == ',' || d == ']' || d == '}' || isSpace(d)) return;
        ++pos_;
      }
      if (!refill()) return;
    }
  }
}

void JsonStream::skipValue(Validator validate) {
  peek();
  const uint64_t start = offset();
  keep_from_ = start;
  scanValue();
  if (validate != nullptr) {
    const char* b = window_.data() + (start - window_offset_);
    validate(*this, std::string_view(b, offset() - start), start);
  }
  keep_from_ = UINT64_MAX;
}

void JsonStream::streamArray(Section section, size_t batch_bytes, BatchSink& sink,
                             uint64_t& sequence) {
  const std::string name = sectionName(section);
  advance();  // '['
  uint64_t index = 0;
  uint64_t batch_first = 0;
  uint64_t elements_end = 0;  // file offset just past the batch's last element
  keep_from_ = offset();
  const auto flush = [&] {
    const size_t n = static_cast<size_t>(elements_end - keep_from_);
    RawBatch batch;
    batch.section = section;
    batch.sequence = sequence++;
    batch.first_index = batch_first;
    batch.file_offset = keep_from_;
    batch.text = sink.acquire();
    batch.text.resize(n + 2);
    batch.text.data()[0] = '[';
    std::memcpy(batch.text.data() + 1, window_.data() + (keep_from_ - window_offset_), n);
    batch.text.data()[n + 1] = ']';
    sink.submit(std::move(batch));
    batch_first = index;
  };
  int c = peek();
  if (c == ']') {
    advance();
    keep_from_ = UINT64_MAX;
    return;
  }
  for (;;) {
    setPath(name, static_cast<int64_t>(index));
    if (c < 0) truncated();
    if (c != '{') fail(offset(), path(), "expected an object, got " + describeStart(c));
    scanValue();
    ++index;
    elements_end = offset();
    c = peek();
    if (c == ',') {
      advance();
      if (elements_end - keep_from_ >= batch_bytes) {
        flush();
        keep_from_ = offset();
      }
      c = peek();
    } else if (c == ']') {
      flush();
      advance();
      keep_from_ = UINT64_MAX;
      setPath(name);
      return;
    } else {
      if (c < 0) truncated();
      fail(offset(), name,
           "malformed JSON: expected ',' or ']' after element " + std::to_string(index - 1) +
               ", got " + describeStart(c));
    }
  }
}

}  // namespace mrcnn::dataset::coco_detail
