// Small pieces the readers share: whole files read, places in text named as line and
// column, the place where JSON stops being JSON, base64, numbers parsed strictly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::dataset::import {

// The file's bytes; throws ImportError naming it when it cannot be read. `spare_capacity`
// bytes more are reserved past the end (a parser's padding).
std::string readFileOrThrow(const std::filesystem::path& path, size_t spare_capacity = 0);

// Every file under `root` (recursively; a symbolic link is followed to a file, not into a
// folder) whose name ends with `suffix`, in the order fs::path sorts them (component by
// component). A walk with readdir: ten thousand files take milliseconds, where
// recursive_directory_iterator and path comparisons take tens. Throws ImportError naming a
// folder it cannot list.
std::vector<std::string> filesUnder(const std::filesystem::path& root, std::string_view suffix);

// "line L, column C" (both from 1) of a byte offset in text.
std::string lineColumn(std::string_view text, size_t offset);

// Where text first stops being JSON (RFC 8259) and why: "line 3, column 7: expected ','
// or '}'"; nullopt when it is valid JSON. simdjson says that a document is malformed but not
// where; this walk runs only on that error path.
std::optional<std::string> jsonSyntaxError(std::string_view text);

// Standard base64 (RFC 4648, padding optional, whitespace ignored); nullopt on bad input.
std::optional<std::string> decodeBase64(std::string_view text);

// A whole decimal number (strtod's syntax, no trailing junk); nullopt otherwise.
std::optional<double> parseDouble(std::string_view text);
std::optional<int64_t> parseInt(std::string_view text);

// The path as messages show it.
inline std::string display(const std::filesystem::path& path) { return path.string(); }

}  // namespace mrcnn::dataset::import
