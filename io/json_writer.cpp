#include "io/json_writer.h"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mrcnn::io {

JsonWriter::~JsonWriter() {
  try {
    flush();
  } catch (...) {  // a stream that throws: what it has, it has
  }
}

void JsonWriter::flush() {
  if (buffer_.empty()) return;
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

JsonWriter& JsonWriter::written() {
  if (stack_.empty() || buffer_.size() >= (1u << 16)) flush();
  return *this;
}

void JsonWriter::beforeValue() {
  if (stack_.empty()) {
    if (wroteTopLevel_) throw std::logic_error("JsonWriter: a second top-level value");
    wroteTopLevel_ = true;
    return;
  }
  Level& level = stack_.back();
  if (level.scope == Scope::kObject) {
    if (!level.haveKey) throw std::logic_error("JsonWriter: an object member without a key");
    level.haveKey = false;  // key() already wrote the separator
    return;
  }
  if (!level.empty) buffer_.push_back(',');
  level.empty = false;
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  buffer_.push_back('{');
  stack_.push_back({Scope::kObject});
  return written();
}

JsonWriter& JsonWriter::endObject() {
  if (stack_.empty() || stack_.back().scope != Scope::kObject || stack_.back().haveKey) {
    throw std::logic_error("JsonWriter: endObject without a matching open object");
  }
  stack_.pop_back();
  buffer_.push_back('}');
  return written();
}

JsonWriter& JsonWriter::beginArray() {
  beforeValue();
  buffer_.push_back('[');
  stack_.push_back({Scope::kArray});
  return written();
}

JsonWriter& JsonWriter::endArray() {
  if (stack_.empty() || stack_.back().scope != Scope::kArray) {
    throw std::logic_error("JsonWriter: endArray without a matching open array");
  }
  stack_.pop_back();
  buffer_.push_back(']');
  return written();
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || stack_.back().scope != Scope::kObject || stack_.back().haveKey) {
    throw std::logic_error("JsonWriter: key outside an object or twice in a row");
  }
  Level& level = stack_.back();
  if (!level.empty) buffer_.push_back(',');
  level.empty = false;
  level.haveKey = true;
  writeString(name);
  buffer_.push_back(':');
  return written();
}

JsonWriter& JsonWriter::value(std::string_view s) {
  beforeValue();
  writeString(s);
  return written();
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  beforeValue();
  if (json.size() >= (1u << 16)) {
    // A large piece goes to the stream as it is, after what is gathered, not through the buffer.
    flush();
    out_.write(json.data(), static_cast<std::streamsize>(json.size()));
    return written();
  }
  buffer_ += json;
  return written();
}

JsonWriter& JsonWriter::value(bool b) {
  beforeValue();
  buffer_ += b ? "true" : "false";
  return written();
}

JsonWriter& JsonWriter::value(std::nullptr_t) {
  beforeValue();
  buffer_ += "null";
  return written();
}

JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) {
    throw std::invalid_argument("JsonWriter: " + std::to_string(d) + " has no JSON form");
  }
  beforeValue();
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, d);
  const std::string_view text(buffer, result.ptr);
  buffer_ += text;
  // Readers type 12 as an integer; Python's json writes 12.0, and COCO's boxes are floats.
  if (text.find_first_of(".e") == std::string_view::npos) buffer_ += ".0";
  return written();
}

JsonWriter& JsonWriter::integer(int64_t i) {
  beforeValue();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, i);
  buffer_.append(buffer, static_cast<size_t>(result.ptr - buffer));
  return written();
}

JsonWriter& JsonWriter::unsignedInteger(uint64_t i) {
  beforeValue();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, i);
  buffer_.append(buffer, static_cast<size_t>(result.ptr - buffer));
  return written();
}

void JsonWriter::writeString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  buffer_.push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        buffer_ += "\\\"";
        break;
      case '\\':
        buffer_ += "\\\\";
        break;
      case '\b':
        buffer_ += "\\b";
        break;
      case '\f':
        buffer_ += "\\f";
        break;
      case '\n':
        buffer_ += "\\n";
        break;
      case '\r':
        buffer_ += "\\r";
        break;
      case '\t':
        buffer_ += "\\t";
        break;
      default:
        if (c < 0x20) {
          buffer_ += "\\u00";
          buffer_.push_back(kHex[c >> 4]);
          buffer_.push_back(kHex[c & 0xf]);
        } else {
          buffer_.push_back(ch);  // UTF-8 passes through unchanged
        }
    }
  }
  buffer_.push_back('"');
}

}  // namespace mrcnn::io
