#include "dataset/import/png_indices.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace mrcnn::dataset::import {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// libpng reports errors through longjmp: the message is kept here, and nothing with a
// destructor lives between setjmp and the calls that may jump.
struct ErrorState {
  std::string message;
};

void onError(png_structp png, png_const_charp message) {
  auto* state = static_cast<ErrorState*>(png_get_error_ptr(png));
  state->message = message;
  png_longjmp(png, 1);
}

void onWarning(png_structp, png_const_charp) {}

// Bytes of a PNG in memory, for libpng's reads.
struct MemorySource {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t at = 0;
};

void readFromMemory(png_structp png, png_bytep out, size_t count) {
  auto* source = static_cast<MemorySource*>(png_get_io_ptr(png));
  if (count > source->size - source->at) png_error(png, "the PNG ends early");
  std::memcpy(out, source->data + source->at, count);
  source->at += count;
}

// The two steps that may jump, each in a function that holds no C++ object across setjmp.
bool readHeader(png_structp png, png_infop info, png_uint_32* width, png_uint_32* height,
                int* color, int* depth) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  *width = png_get_image_width(png, info);
  *height = png_get_image_height(png, info);
  *color = png_get_color_type(png, info);
  *depth = png_get_bit_depth(png, info);
  return true;
}

bool readBody(png_structp png, png_infop info, int depth, int color, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (depth < 8) png_set_packing(png);  // one byte a pixel, the index kept as it is
  if (depth == 16) png_set_strip_16(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_read_update_info(png, info);
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

// libpng's reader for one PNG, destroyed with it.
class PngReader {
 public:
  PngReader() {
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state_, onError, onWarning);
    info_ = png_ != nullptr ? png_create_info_struct(png_) : nullptr;
  }
  ~PngReader() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  bool started() const { return info_ != nullptr; }
  png_structp png() const { return png_; }
  png_infop info() const { return info_; }
  std::string problem() const { return state_.message.empty() ? "corrupt PNG" : state_.message; }

 private:
  ErrorState state_;
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

// What an RGB PNG's pixels become.
enum class RgbRule { kVocColormap, kLargestSample };

// The samples of a PNG whose 8-byte signature has been read and whose source is set.
PngIndices readSamples(PngReader& reader, RgbRule rgb_rule);

// VOC's colour of index i (the devkit's colormap): the bits of i spread over the high bits of
// r, g and b, three at a time. Its inverse reads RGB-saved masks (datumaro's VOC export).
std::array<int, 1 << 24> const& vocColourToIndex() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<int, 1 << 24>>();
    t->fill(-1);
    for (int i = 0; i < 256; ++i) {
      int r = 0, g = 0, b = 0;
      for (int j = 0, c = i; j < 8; ++j, c >>= 3) {
        r |= ((c >> 0) & 1) << (7 - j);
        g |= ((c >> 1) & 1) << (7 - j);
        b |= ((c >> 2) & 1) << (7 - j);
      }
      (*t)[static_cast<size_t>((r << 16) | (g << 8) | b)] = i;
    }
    return t;
  }();
  return *table;
}

}  // namespace

PngIndices readPngIndices(const std::filesystem::path& path) {
  PngIndices result;
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    result.problem = "cannot open";
    return result;
  }
  png_byte signature[8] = {};
  if (std::fread(signature, 1, 8, file.get()) != 8 || png_sig_cmp(signature, 0, 8) != 0) {
    result.problem = "not a PNG file";
    return result;
  }
  PngReader reader;
  if (!reader.started()) {
    result.problem = "libpng could not start";
    return result;
  }
  png_init_io(reader.png(), file.get());
  return readSamples(reader, RgbRule::kVocColormap);
}

PngIndices decodePngSamples(std::span<const uint8_t> bytes) {
  PngIndices result;
  if (bytes.size() < 8 || png_sig_cmp(bytes.data(), 0, 8) != 0) {
    result.problem = "not a PNG";
    return result;
  }
  PngReader reader;
  if (!reader.started()) {
    result.problem = "libpng could not start";
    return result;
  }
  MemorySource source{bytes.data(), bytes.size(), 8};
  png_set_read_fn(reader.png(), &source, readFromMemory);
  return readSamples(reader, RgbRule::kLargestSample);
}

namespace {

PngIndices readSamples(PngReader& reader, RgbRule rgb_rule) {
  PngIndices result;
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int color = 0;
  int depth = 0;
  if (!readHeader(reader.png(), reader.info(), &width, &height, &color, &depth)) {
    result.problem = reader.problem();
    return result;
  }
  const bool voc = rgb_rule == RgbRule::kVocColormap;
  const bool rgb = color == PNG_COLOR_TYPE_RGB || color == PNG_COLOR_TYPE_RGB_ALPHA;
  const bool grey = color == PNG_COLOR_TYPE_GRAY || (!voc && color == PNG_COLOR_TYPE_GRAY_ALPHA);
  if (!(color == PNG_COLOR_TYPE_PALETTE || grey || rgb) || (voc && depth > 8)) {
    result.problem = std::string(voc ? "not an 8-bit palette, grayscale or RGB PNG"
                                     : "not a palette, grayscale or RGB PNG") +
                     " (colour type " + std::to_string(color) + ", " + std::to_string(depth) +
                     "-bit samples)";
    return result;
  }
  if (uint64_t{width} * height > (uint64_t{1} << 30)) {
    result.problem = "a PNG of " + std::to_string(width) + "x" + std::to_string(height) +
                     " pixels (more than 2^30)";
    return result;
  }
  cv::Mat values(static_cast<int>(height), static_cast<int>(width), rgb ? CV_8UC3 : CV_8UC1);
  std::vector<png_bytep> rows(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = values.ptr<png_byte>(static_cast<int>(y));
  if (!readBody(reader.png(), reader.info(), depth, color, rows.data())) {
    result.problem = reader.problem();
    return result;
  }
  if (!rgb) {
    result.values = values;
    return result;
  }
  if (!voc) {
    cv::Mat largest(values.rows, values.cols, CV_8UC1);
    for (int y = 0; y < values.rows; ++y) {
      const uint8_t* p = values.ptr<uint8_t>(y);
      uint8_t* q = largest.ptr<uint8_t>(y);
      for (int x = 0; x < values.cols; ++x, p += 3) q[x] = std::max({p[0], p[1], p[2]});
    }
    result.values = largest;
    return result;
  }
  // An RGB mask: its colours are VOC's colormap; any other colour is not an index.
  const auto& to_index = vocColourToIndex();
  cv::Mat indices(values.rows, values.cols, CV_8UC1);
  for (int y = 0; y < values.rows; ++y) {
    const uint8_t* p = values.ptr<uint8_t>(y);
    uint8_t* q = indices.ptr<uint8_t>(y);
    for (int x = 0; x < values.cols; ++x, p += 3) {
      const int index = to_index[static_cast<size_t>((p[0] << 16) | (p[1] << 8) | p[2])];
      if (index < 0) {
        result.problem = "an RGB mask with colour (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                         ", " + std::to_string(p[2]) + ") at x " + std::to_string(x) + ", y " +
                         std::to_string(y) + ", which is not in VOC's colormap";
        return result;
      }
      q[x] = static_cast<uint8_t>(index);
    }
  }
  result.values = indices;
  return result;
}

}  // namespace
}  // namespace mrcnn::dataset::import
