#include "dataset/import/file_util.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/import/import.h"

namespace mrcnn::dataset::import {

std::string readFileOrThrow(const std::filesystem::path& path, size_t spare_capacity) {
  // One read of the whole file where its size is known (a pipe or /proc file grows the
  // string as it reads): ten thousand small files are an open, a stat, a read and a close
  // each.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ImportError(display(path), "", std::string("cannot read: ") + std::strerror(errno));
  std::string bytes;
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) {
    bytes.reserve(static_cast<size_t>(st.st_size) + spare_capacity);
    bytes.resize(static_cast<size_t>(st.st_size));
  }
  size_t have = 0;
  int error = 0;
  for (;;) {
    if (have == bytes.size()) {
      // A regular file read to its size is whole; anything else is read until its end.
      if (regular && have == static_cast<size_t>(st.st_size) && have > 0) break;
      bytes.resize(std::max<size_t>(2 * bytes.size(), 1 << 14));
    }
    const ssize_t n = ::read(fd, bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  if (error != 0) throw ImportError(display(path), "", std::string("read error: ") + std::strerror(error));
  bytes.resize(have);
  if (bytes.capacity() < have + spare_capacity) bytes.reserve(have + spare_capacity);
  return bytes;
}

namespace {

// Adds the matching files of `dir` (a path ending without '/') and its folders to `out`.
void walkFolder(const std::string& dir, std::string_view suffix, std::vector<std::string>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) throw ImportError(dir, "", std::string("cannot list the folder: ") + std::strerror(errno));
  std::vector<std::string> folders;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + std::string(name);
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN || type == DT_LNK) {
      // The entry's own type for a folder (links are not walked into), the target's for a file.
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        type = DT_DIR;
      } else {
        type = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
      }
    }
    if (type == DT_DIR) {
      folders.push_back(std::move(path));
    } else if (type == DT_REG && name.size() >= suffix.size() &&
               name.substr(name.size() - suffix.size()) == suffix) {
      out.push_back(std::move(path));
    }
  }
  ::closedir(d);
  for (const std::string& folder : folders) walkFolder(folder, suffix, out);
}

// fs::path's order on paths under one root: component by component, which is the order of
// the strings with '/' below every other character.
bool pathLess(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    const int ca = a[i] == '/' ? -1 : static_cast<unsigned char>(a[i]);
    const int cb = b[i] == '/' ? -1 : static_cast<unsigned char>(b[i]);
    return ca < cb;
  }
  return a.size() < b.size();
}

}  // namespace

std::vector<std::string> filesUnder(const std::filesystem::path& root, std::string_view suffix) {
  std::string dir = root.string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::vector<std::string> files;
  walkFolder(dir, suffix, files);
  std::sort(files.begin(), files.end(), pathLess);
  return files;
}

std::string lineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

namespace {

// A recursive-descent walk of JSON that only finds the first fault. Depth is bounded so a
// hostile file of nested brackets cannot overflow the stack.
class JsonSyntax {
 public:
  explicit JsonSyntax(std::string_view text) : s_(text) {}

  std::optional<std::string> check() {
    space();
    if (!value(0)) return fault_;
    space();
    if (i_ != s_.size()) return at("more content after the JSON value");
    return std::nullopt;
  }

 private:
  static constexpr int kMaxDepth = 1024;

  bool fail(const std::string& why) {
    if (!fault_) fault_ = at(why);
    return false;
  }
  std::string at(const std::string& why) const { return lineColumn(s_, i_) + ": " + why; }
  std::string found() const {
    if (i_ >= s_.size()) return "the end of the file";
    return std::string("'") + s_[i_] + "'";
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return fail("expected a value, got " + found());
    i_ += word.size();
    return true;
  }
  bool string() {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return fail("a control character inside a string");
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) break;
        const char e = s_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (i_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_ + k])))
              return fail("a bad \\u escape");
          }
          i_ += 4;
        } else if (std::strchr("\"\\/bfnrt", e) == nullptr) {
          return fail("a bad escape in a string");
        }
      }
      ++i_;
    }
    return fail("an unterminated string");
  }
  bool number() {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    auto digits = [&] {
      const size_t b = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      return i_ - b;
    };
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (digits() == 0) {
      i_ = start;
      return fail("a malformed number");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return fail("a malformed number");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return fail("a malformed number");
    }
    return true;
  }
  bool value(int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (i_ >= s_.size()) return fail("expected a value, got the end of the file");
    const char c = s_[i_];
    if (c == '{') return container(depth, '}');
    if (c == '[') return container(depth, ']');
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    return fail("expected a value, got " + found());
  }
  bool container(int depth, char close) {
    ++i_;
    space();
    if (i_ < s_.size() && s_[i_] == close) {
      ++i_;
      return true;
    }
    for (;;) {
      if (close == '}') {
        if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a key, got " + found());
        if (!string()) return false;
        space();
        if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':', got " + found());
        ++i_;
        space();
      }
      if (!value(depth + 1)) return false;
      space();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        space();
        continue;
      }
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return true;
      }
      return fail(std::string("expected ',' or '") + close + "', got " + found());
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::optional<std::string> fault_;
};

int base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> jsonSyntaxError(std::string_view text) {
  return JsonSyntax(text).check();
}

std::optional<std::string> decodeBase64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;
  size_t padding = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding != 0) return std::nullopt;  // data after the padding
    const int v = base64Value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xFF));
      out.push_back(static_cast<char>((bits >> 8) & 0xFF));
      out.push_back(static_cast<char>(bits & 0xFF));
      bits = 0;
      count = 0;
    }
  }
  if (padding > 2 || count == 1) return std::nullopt;
  if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xFF));
  if (count == 3) {
    out.push_back(static_cast<char>((bits >> 10) & 0xFF));
    out.push_back(static_cast<char>((bits >> 2) & 0xFF));
  }
  return out;
}

std::optional<double> parseDouble(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  if (text.front() == '+') text.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> parseInt(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace mrcnn::dataset::import
