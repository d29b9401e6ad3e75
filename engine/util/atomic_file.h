// Files of a run directory are written whole or not at all: to a temporary name in the
// same folder, flushed, then renamed over the target. A killed process leaves either the
// old file or the new one, never a torn one.
#pragma once

#include <filesystem>
#include <string_view>

namespace mrcnn::engine {

// Throws std::runtime_error naming the path and the system's reason on failure; the
// previous content of `path`, if any, is then left untouched.
void writeFileAtomic(const std::filesystem::path& path, std::string_view contents);

}  // namespace mrcnn::engine
