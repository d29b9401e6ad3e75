#include "io/json_writer.h"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mrcnn::io {

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
  if (!level.empty) out_.put(',');
  level.empty = false;
}

JsonWriter& JsonWriter::beginObject() {
  beforeValue();
  out_.put('{');
  stack_.push_back({Scope::kObject});
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  if (stack_.empty() || stack_.back().scope != Scope::kObject || stack_.back().haveKey) {
    throw std::logic_error("JsonWriter: endObject without a matching open object");
  }
  stack_.pop_back();
  out_.put('}');
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  beforeValue();
  out_.put('[');
  stack_.push_back({Scope::kArray});
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  if (stack_.empty() || stack_.back().scope != Scope::kArray) {
    throw std::logic_error("JsonWriter: endArray without a matching open array");
  }
  stack_.pop_back();
  out_.put(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  if (stack_.empty() || stack_.back().scope != Scope::kObject || stack_.back().haveKey) {
    throw std::logic_error("JsonWriter: key outside an object or twice in a row");
  }
  Level& level = stack_.back();
  if (!level.empty) out_.put(',');
  level.empty = false;
  level.haveKey = true;
  writeString(name);
  out_.put(':');
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  beforeValue();
  writeString(s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  beforeValue();
  out_ << (b ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::value(std::nullptr_t) {
  beforeValue();
  out_ << "null";
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) {
    throw std::invalid_argument("JsonWriter: " + std::to_string(d) + " has no JSON form");
  }
  beforeValue();
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, d);
  const std::string_view text(buffer, result.ptr);
  out_ << text;
  // Readers type 12 as an integer; Python's json writes 12.0, and COCO's boxes are floats.
  if (text.find_first_of(".e") == std::string_view::npos) out_ << ".0";
  return *this;
}

JsonWriter& JsonWriter::integer(int64_t i) {
  beforeValue();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, i);
  out_.write(buffer, result.ptr - buffer);
  return *this;
}

JsonWriter& JsonWriter::unsignedInteger(uint64_t i) {
  beforeValue();
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, i);
  out_.write(buffer, result.ptr - buffer);
  return *this;
}

void JsonWriter::writeString(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out_.put('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out_ << "\\\"";
        break;
      case '\\':
        out_ << "\\\\";
        break;
      case '\b':
        out_ << "\\b";
        break;
      case '\f':
        out_ << "\\f";
        break;
      case '\n':
        out_ << "\\n";
        break;
      case '\r':
        out_ << "\\r";
        break;
      case '\t':
        out_ << "\\t";
        break;
      default:
        if (c < 0x20) {
          out_ << "\\u00" << kHex[c >> 4] << kHex[c & 0xf];
        } else {
          out_.put(ch);  // UTF-8 passes through unchanged
        }
    }
  }
  out_.put('"');
}

}  // namespace mrcnn::io
