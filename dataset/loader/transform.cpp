#include "dataset/loader/transform.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace mrcnn::dataset {

namespace {

// The two source taps of each output index along one axis, as torch's
// compute_source_index_and_lambda makes them for align_corners=False in float32.
struct LinearTaps {
  std::vector<int> i0, i1;
  std::vector<float> w0, w1;
};

LinearTaps linearTaps(int in, int out, bool reversed) {
  LinearTaps taps;
  taps.i0.resize(static_cast<size_t>(out));
  taps.i1.resize(static_cast<size_t>(out));
  taps.w0.resize(static_cast<size_t>(out));
  taps.w1.resize(static_cast<size_t>(out));
  const float ratio = static_cast<float>(in) / static_cast<float>(out);
  for (int o = 0; o < out; ++o) {
    int i0 = o;
    int i1 = o;
    float lambda1 = 0;
    if (in != out) {
      // One rounding, as torch's vectorised CPU kernels compute it (with an FMA): the
      // separate multiply and subtract move the weights by up to 3e-5 on a 600-pixel side.
      float source = std::fma(ratio, static_cast<float>(o) + 0.5f, -0.5f);
      if (source < 0) source = 0;
      i0 = std::min(static_cast<int>(std::floor(source)), in - 1);
      lambda1 = std::clamp(source - static_cast<float>(i0), 0.0f, 1.0f);
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
    }
    const auto at = static_cast<size_t>(reversed ? out - 1 - o : o);
    taps.i0[at] = i0;
    taps.i1[at] = i1;
    taps.w0[at] = 1.0f - lambda1;
    taps.w1[at] = lambda1;
  }
  return taps;
}

// Per channel (RGB), the normalised value of each byte: (x / 255 - mean) / std in float32.
struct NormalisationTable {
  float value[3][256];
  NormalisationTable() {
    for (int c = 0; c < 3; ++c)
      for (int v = 0; v < 256; ++v)
        value[c][v] = (static_cast<float>(v) / 255.0f - kImageNetMean[static_cast<size_t>(c)]) /
                      kImageNetStd[static_cast<size_t>(c)];
  }
};

const NormalisationTable& normalisationTable() {
  static const NormalisationTable table;
  return table;
}

}  // namespace

ResizedSize resizedSize(int height, int width, const ResizeSpec& spec) {
  if (height <= 0 || width <= 0)
    throw std::invalid_argument("resizedSize: image size must be positive, got " +
                                std::to_string(height) + "x" + std::to_string(width));
  ResizedSize out;
  if (spec.mode == ResizeMode::kFixed) {
    if (spec.canvas_height <= 0 || spec.canvas_width <= 0)
      throw std::invalid_argument("resizedSize: the canvas size must be positive");
    const int64_t ch = spec.canvas_height;
    const int64_t cw = spec.canvas_width;
    // ch / height <= cw / width, compared exactly.
    if (ch * width <= cw * height) {
      out.height = spec.canvas_height;
      out.width = static_cast<int>(width * ch / height);
      out.scale = static_cast<double>(ch) / height;
    } else {
      out.width = spec.canvas_width;
      out.height = static_cast<int>(height * cw / width);
      out.scale = static_cast<double>(cw) / width;
    }
  } else {
    if (spec.min_size <= 0 || spec.max_size <= 0)
      throw std::invalid_argument("resizedSize: min_size and max_size must be positive");
    const double shorter = std::min(height, width);
    const double longer = std::max(height, width);
    out.scale = std::min(static_cast<double>(spec.min_size) / shorter,
                         static_cast<double>(spec.max_size) / longer);
    out.height = static_cast<int>(std::floor(static_cast<double>(height) * out.scale));
    out.width = static_cast<int>(std::floor(static_cast<double>(width) * out.scale));
  }
  out.height = std::max(out.height, 1);
  out.width = std::max(out.width, 1);
  return out;
}

int roundUp(int value, int multiple) {
  if (multiple <= 1) return value;
  return (value + multiple - 1) / multiple * multiple;
}

void resizeNormalize(const cv::Mat& image, bool bgr, int out_height, int out_width, bool flip,
                     float* out, size_t out_stride, size_t plane_stride) {
  if (image.type() != CV_8UC3)
    throw std::invalid_argument("resizeNormalize: expected an 8-bit 3-channel image");
  const LinearTaps xs = linearTaps(image.cols, out_width, flip);
  const LinearTaps ys = linearTaps(image.rows, out_height, false);
  const NormalisationTable& table = normalisationTable();
  const auto w = static_cast<size_t>(out_width);

  // Rows resized horizontally, per channel planar: the two most recent source rows.
  std::vector<float> rows[2] = {std::vector<float>(3 * w), std::vector<float>(3 * w)};
  int row_source[2] = {-1, -1};
  auto horizontal = [&](int source_row) -> const float* {
    for (int k = 0; k < 2; ++k)
      if (row_source[k] == source_row) return rows[k].data();
    // Replace the slot that the current output row does not need.
    const int k = row_source[0] < row_source[1] ? 0 : 1;
    row_source[k] = source_row;
    float* dst = rows[k].data();
    const uint8_t* src = image.ptr<uint8_t>(source_row);
    for (int c = 0; c < 3; ++c) {
      const int byte = bgr ? 2 - c : c;
      const float* lut = table.value[c];
      float* plane = dst + static_cast<size_t>(c) * w;
      for (size_t x = 0; x < w; ++x) {
        const float a = lut[src[xs.i0[x] * 3 + byte]];
        const float b = lut[src[xs.i1[x] * 3 + byte]];
        plane[x] = a * xs.w0[x] + b * xs.w1[x];
      }
    }
    return dst;
  };

  for (int y = 0; y < out_height; ++y) {
    const auto yi = static_cast<size_t>(y);
    const float* top = horizontal(ys.i0[yi]);
    // Source rows only grow with y, so loading `bottom` never evicts `top`.
    const float* bottom = horizontal(ys.i1[yi]);
    const float w0 = ys.w0[yi];
    const float w1 = ys.w1[yi];
    for (size_t c = 0; c < 3; ++c) {
      float* dst = out + c * plane_stride + yi * out_stride;
      const float* t = top + c * w;
      const float* b = bottom + c * w;
      for (size_t x = 0; x < w; ++x)
        dst[x] = t[x] * w0 + b[x] * w1;
    }
  }
}

void resizeMask(const cv::Mat& mask, int out_height, int out_width, bool flip, uint8_t* out) {
  if (mask.type() != CV_8UC1)
    throw std::invalid_argument("resizeMask: expected an 8-bit single-channel mask");
  const size_t w = static_cast<size_t>(out_width);
  std::fill_n(out, static_cast<size_t>(out_height) * w, uint8_t{0});
  // The foreground's bounding rows and columns in the source.
  int x_lo = mask.cols, x_hi = -1, y_lo = mask.rows, y_hi = -1;
  for (int y = 0; y < mask.rows; ++y) {
    const uint8_t* row = mask.ptr<uint8_t>(y);
    for (int x = 0; x < mask.cols; ++x) {
      if (row[x] == 0) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  if (x_hi < 0) return;
  const LinearTaps xs = linearTaps(mask.cols, out_width, flip);
  const LinearTaps ys = linearTaps(mask.rows, out_height, false);
  auto value = [&](int y, int x) -> float { return mask.at<uint8_t>(y, x) != 0 ? 1.0f : 0.0f; };
  for (int oy = 0; oy < out_height; ++oy) {
    const auto yi = static_cast<size_t>(oy);
    if (ys.i1[yi] < y_lo || ys.i0[yi] > y_hi) continue;
    uint8_t* dst = out + yi * w;
    for (size_t x = 0; x < w; ++x) {
      if (xs.i1[x] < x_lo || xs.i0[x] > x_hi) continue;
      const float top =
          value(ys.i0[yi], xs.i0[x]) * xs.w0[x] + value(ys.i0[yi], xs.i1[x]) * xs.w1[x];
      const float bottom =
          value(ys.i1[yi], xs.i0[x]) * xs.w0[x] + value(ys.i1[yi], xs.i1[x]) * xs.w1[x];
      dst[x] = top * ys.w0[yi] + bottom * ys.w1[yi] >= 0.5f ? 1 : 0;
    }
  }
}

std::array<float, 4> transformBox(const std::array<double, 4>& xywh, int in_height, int in_width,
                                  int out_height, int out_width, bool flip) {
  const float ratio_w = static_cast<float>(out_width) / static_cast<float>(in_width);
  const float ratio_h = static_cast<float>(out_height) / static_cast<float>(in_height);
  const auto x = static_cast<float>(xywh[0]);
  const auto y = static_cast<float>(xywh[1]);
  const float x2 = x + static_cast<float>(xywh[2]);
  const float y2 = y + static_cast<float>(xywh[3]);
  const auto ow = static_cast<float>(out_width);
  const auto oh = static_cast<float>(out_height);
  std::array<float, 4> box{std::clamp(x * ratio_w, 0.0f, ow), std::clamp(y * ratio_h, 0.0f, oh),
                           std::clamp(x2 * ratio_w, 0.0f, ow), std::clamp(y2 * ratio_h, 0.0f, oh)};
  if (flip) box = {ow - box[2], box[1], ow - box[0], box[3]};
  return box;
}

}  // namespace mrcnn::dataset
