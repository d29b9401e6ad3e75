// Files written whole or not at all: to a temporary name in the same folder (".<name>.XXXXXX.tmp"),
// flushed, then renamed over the target. A killed process leaves either the old file or the
// new one, never a torn one; a failed write removes its temporary file and leaves the old
// content untouched.
#pragma once

#include <filesystem>
#include <string_view>

namespace mrcnn::io {

struct AtomicWriteOptions {
  // Also flush the folder after the rename, so that the new name survives a power cut
  // (checkpoints and their pointers).
  bool durable = false;
};

// Creates the folder when needed. Throws DiskFullError (io/write_error.h) when the disk is
// full, else std::runtime_error naming the path and the system's reason.
void writeFileAtomic(const std::filesystem::path& path, std::string_view contents,
                     AtomicWriteOptions options = {});

// Flushes a file or a folder to disk by path; throws like writeFileAtomic.
void syncPath(const std::filesystem::path& path, bool directory);

}  // namespace mrcnn::io
