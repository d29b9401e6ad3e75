// A small streaming JSON writer for the files the dataset module produces (COCO json). The
// output is compact (no whitespace) and deterministic: doubles print as the shortest text
// that reads back to the same value, like Python's repr (so 12.0 stays a float: "12.0").
#pragma once

#include <concepts>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::io {

class JsonWriter {
 public:
  // The text reaches `out` in large pieces: whenever 64 KiB have gathered, when the top-level
  // value is complete, at flush() and when the writer goes away.
  explicit JsonWriter(std::ostream& out) : out_(out) {}
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  void flush();

  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  // The next value is this member of the current object.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::nullptr_t);
  // Throws std::invalid_argument for NaN and infinities, which JSON cannot hold.
  JsonWriter& value(double d);
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter& value(T i) {
    if constexpr (std::signed_integral<T>) {
      return integer(static_cast<int64_t>(i));
    } else {
      return unsignedInteger(static_cast<uint64_t>(i));
    }
  }

  // A value already in JSON form (text another writer made), written as it is.
  JsonWriter& raw(std::string_view json);

  // True once exactly one complete top-level value has been written.
  bool complete() const { return stack_.empty() && wroteTopLevel_; }

 private:
  enum class Scope : uint8_t { kObject, kArray };
  struct Level {
    Scope scope;
    bool empty = true;
    bool haveKey = false;
  };
  JsonWriter& integer(int64_t i);
  JsonWriter& unsignedInteger(uint64_t i);
  void beforeValue();  // writes the separator; throws std::logic_error on misuse
  void writeString(std::string_view s);
  // After each call: the gathered text goes out when it is large or the value is complete.
  JsonWriter& written();

  std::ostream& out_;
  std::string buffer_;
  std::vector<Level> stack_;
  bool wroteTopLevel_ = false;
};

}  // namespace mrcnn::io
