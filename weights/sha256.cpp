#include "weights/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "weights/catalogue.h"

namespace mrcnn::weights {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1)
    throw WeightsError("OpenSSL cannot start a SHA-256 hash");
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_);
}

void Sha256::update(const void* data, size_t size) {
  if (EVP_DigestUpdate(ctx_, data, size) != 1) throw WeightsError("OpenSSL's SHA-256 failed");
}

std::string Sha256::hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx_, digest.data(), &size) != 1)
    throw WeightsError("OpenSSL's SHA-256 failed");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kDigits[digest[i] >> 4]);
    out.push_back(kDigits[digest[i] & 0xf]);
  }
  return out;
}

std::string sha256OfFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw WeightsError(file.string() + ": cannot read it: " + std::strerror(errno));
  Sha256 hash;
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    hash.update(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw WeightsError(file.string() + ": read error");
  return hash.hex();
}

}  // namespace mrcnn::weights
