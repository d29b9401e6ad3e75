// An encoded image's header and structure, read without decoding (image_check.h): no OpenCV,
// so that what reads image sizes alone (the importers) links no decoder.
#include "dataset/image/image_check.h"

#include <algorithm>
#include <cstring>

namespace mrcnn::dataset {
namespace {

uint32_t be16(const uint8_t* p) {
  return (uint32_t{p[0]} << 8) | p[1];
}
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

bool isJpeg(std::span<const uint8_t> b) {
  return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8;
}
constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
bool isPng(std::span<const uint8_t> b) {
  return b.size() >= 8 && std::equal(kPngSignature, kPngSignature + 8, b.begin());
}

bool isSof(uint8_t m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

// Walks a JPEG's markers from SOI to EOI. Returns the problem, empty when whole; fills the
// size from the first SOF.
std::string walkJpeg(std::span<const uint8_t> b, ImageHeader& header, bool need_eoi) {
  size_t i = 2;
  bool have_sof = false;
  const size_t n = b.size();
  while (true) {
    // Find the next marker: 0xFF (fill bytes allowed) then a code.
    if (i >= n) return need_eoi ? "truncated JPEG (no EOI marker)" : "";
    if (b[i] != 0xFF) return "malformed JPEG (no marker at byte " + std::to_string(i) + ")";
    while (i < n && b[i] == 0xFF)
      ++i;
    if (i >= n) return "truncated JPEG (no EOI marker)";
    const uint8_t m = b[i++];
    if (m == 0xD9) return have_sof ? "" : "malformed JPEG (no SOF header)";
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // markers without a length
    if (i + 2 > n) return "truncated JPEG (cut in a header)";
    const size_t length = be16(&b[i]);
    if (length < 2) return "malformed JPEG (segment length " + std::to_string(length) + ")";
    if (i + length > n) return "truncated JPEG (cut in a header)";
    if (isSof(m) && !have_sof) {
      if (length < 7) return "malformed JPEG (short SOF header)";
      header.height = be16(&b[i + 3]);
      header.width = be16(&b[i + 5]);
      have_sof = true;
      if (!need_eoi) return "";
    }
    i += length;
    if (m == 0xDA) {  // entropy-coded data up to the next marker that is not a restart
      while (true) {
        const void* ff = std::memchr(b.data() + i, 0xFF, n - i);
        i = ff ? static_cast<size_t>(static_cast<const uint8_t*>(ff) - b.data()) : n;
        if (i + 1 >= n) return "truncated JPEG (no EOI marker)";
        const uint8_t next = b[i + 1];
        if (next == 0x00 || next == 0xFF || (next >= 0xD0 && next <= 0xD7)) {
          i += next == 0xFF ? 1 : 2;
          continue;
        }
        break;
      }
    }
  }
}

// Walks a PNG's chunks up to IEND; fills the size from IHDR.
std::string walkPng(std::span<const uint8_t> b, ImageHeader& header, bool need_end) {
  size_t i = 8;
  const size_t n = b.size();
  bool first = true;
  while (true) {
    if (i + 8 > n) return "truncated PNG (no IEND chunk)";
    const uint64_t length = be32(&b[i]);
    const uint8_t* type = &b[i + 4];
    const bool ihdr = std::equal(type, type + 4, "IHDR");
    if (first) {
      if (!ihdr || length < 8 || i + 16 > n) return "malformed PNG (no IHDR chunk first)";
      header.width = be32(&b[i + 8]);
      header.height = be32(&b[i + 12]);
      first = false;
      if (!need_end) return "";
    }
    if (i + 12 + length > n) return "truncated PNG (no IEND chunk)";
    if (std::equal(type, type + 4, "IEND")) return "";
    i += 12 + length;
  }
}

}  // namespace

std::optional<ImageHeader> readImageHeader(std::span<const uint8_t> bytes) {
  ImageHeader header;
  if (isJpeg(bytes)) {
    header.format = ImageFormat::kJpeg;
    if (walkJpeg(bytes, header, /*need_eoi=*/false).empty() && header.width > 0) return header;
  } else if (isPng(bytes)) {
    header.format = ImageFormat::kPng;
    if (walkPng(bytes, header, /*need_end=*/false).empty()) return header;
  }
  return std::nullopt;
}

ImageCheck checkStructure(std::span<const uint8_t> bytes) {
  ImageCheck check;
  ImageHeader& header = check.header;
  if (bytes.empty()) {
    check.problem = "empty file";
    return check;
  }
  if (isJpeg(bytes)) {
    header.format = ImageFormat::kJpeg;
    check.problem = walkJpeg(bytes, header, /*need_eoi=*/true);
  } else if (isPng(bytes)) {
    header.format = ImageFormat::kPng;
    check.problem = walkPng(bytes, header, /*need_end=*/true);
  }
  if (check.problem.empty() && header.format != ImageFormat::kUnknown &&
      (header.width == 0 || header.height == 0)) {
    check.problem = "image header gives a size of 0";
  }
  check.ok = check.problem.empty();
  return check;
}

}  // namespace mrcnn::dataset
