// Checks an encoded image as dataset_convert stores it: its pixel size from the JPEG or PNG
// header (the size COCO files give: EXIF orientation is not applied), whether the file is
// whole (a JPEG ends with its EOI marker, a PNG with its IEND chunk: a truncated copy is the
// most common corruption, and decoders fill the missing part silently), and whether it
// decodes (a reduced-size decode for JPEG, which is a fraction of a full one).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace mrcnn::dataset {

enum class ImageFormat : uint8_t { kUnknown, kJpeg, kPng };

struct ImageHeader {
  ImageFormat format = ImageFormat::kUnknown;
  uint32_t width = 0;
  uint32_t height = 0;
};

struct ImageCheck {
  bool ok = false;
  ImageHeader header;   // valid when ok
  std::string problem;  // why not ok: "truncated JPEG (no EOI marker)", ...
};

// Reads the size from a JPEG's SOF or a PNG's IHDR; nullopt for other formats or when the
// header itself is cut or malformed.
std::optional<ImageHeader> readImageHeader(std::span<const uint8_t> bytes);

// The header and the structure (JPEG markers up to EOI, PNG chunks up to IEND), without
// decoding: not ok with the problem for a cut or malformed file. Other formats are ok with an
// unknown header (their decoder is the check).
ImageCheck checkStructure(std::span<const uint8_t> bytes);

// The full check: header, structure (JPEG markers up to EOI, PNG chunks up to IEND) and a
// decode. Other formats OpenCV reads (BMP, WebP, TIFF...) are decoded in full for their size.
ImageCheck checkImage(std::span<const uint8_t> bytes);

}  // namespace mrcnn::dataset
