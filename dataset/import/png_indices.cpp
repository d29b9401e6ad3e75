#include "dataset/import/png_indices.h"

#include <png.h>

#include <array>
#include <csetjmp>
#include <cstdio>
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

// The two steps that may jump, each in a function that holds no C++ object across setjmp.
bool readHeader(png_structp png, png_infop info, std::FILE* file, png_uint_32* width,
                png_uint_32* height, int* color, int* depth) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, file);
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
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_read_update_info(png, info);
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

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
  ErrorState state;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, onError, onWarning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  struct Destroy {
    png_structp* png;
    png_infop* info;
    ~Destroy() { png_destroy_read_struct(png, info, nullptr); }
  } destroy{&png, &info};
  if (info == nullptr) {
    result.problem = "libpng could not start";
    return result;
  }
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int color = 0;
  int depth = 0;
  if (!readHeader(png, info, file.get(), &width, &height, &color, &depth)) {
    result.problem = state.message.empty() ? "corrupt PNG" : state.message;
    return result;
  }
  const bool rgb = color == PNG_COLOR_TYPE_RGB || color == PNG_COLOR_TYPE_RGB_ALPHA;
  if ((color != PNG_COLOR_TYPE_PALETTE && color != PNG_COLOR_TYPE_GRAY && !rgb) || depth > 8) {
    result.problem = "not an 8-bit palette, grayscale or RGB PNG (colour type " +
                     std::to_string(color) + ", " + std::to_string(depth) + "-bit samples)";
    return result;
  }
  cv::Mat values(static_cast<int>(height), static_cast<int>(width), rgb ? CV_8UC3 : CV_8UC1);
  std::vector<png_bytep> rows(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = values.ptr<png_byte>(static_cast<int>(y));
  if (!readBody(png, info, depth, color, rows.data())) {
    result.problem = state.message.empty() ? "corrupt PNG" : state.message;
    return result;
  }
  if (!rgb) {
    result.values = values;
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

}  // namespace mrcnn::dataset::import
