// SHA-256 (OpenSSL's), for checking downloaded and cached weights against the hash prefix
// in their catalogue entry.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

struct evp_md_ctx_st;

namespace mrcnn::weights {

// A running hash: update() with the bytes as they arrive, hex() once at the end.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  // The digest as 64 lower-case hex digits; the hash cannot be updated afterwards.
  std::string hex();

 private:
  evp_md_ctx_st* ctx_;
};

// The hex digest of a file's contents. Throws WeightsError naming the file when it cannot be
// read.
std::string sha256OfFile(const std::filesystem::path& file);

}  // namespace mrcnn::weights
