// The geometry of one RoI, shared by the CPU and CUDA kernels (forward and backward): where
// its bins are, how many points each bin samples, and the bilinear weights of one sampling
// point. The arithmetic (types, order, the 1. and .5f literals) follows torchvision's
// kernels operation by operation, so that float results agree bit for bit on the CPU.
#pragma once

#include <cstdint>

#include "engine/ops/host_device.h"

namespace mrcnn::ops::detail {

template <typename T>
struct RoiGeometry {
  int64_t batch_index;
  T start_h, start_w;
  T bin_h, bin_w;
  int grid_h, grid_w;  // sampling points per bin, per side (<= 0: the RoI samples nothing)

  MRCNN_HOST_DEVICE RoiGeometry(const T* roi, T spatial_scale, int64_t pooled_height,
                                int64_t pooled_width, int64_t sampling_ratio, bool aligned) {
    batch_index = static_cast<int64_t>(roi[0]);
    const T offset = aligned ? static_cast<T>(0.5) : static_cast<T>(0.0);
    start_w = roi[1] * spatial_scale - offset;
    start_h = roi[2] * spatial_scale - offset;
    const T end_w = roi[3] * spatial_scale - offset;
    const T end_h = roi[4] * spatial_scale - offset;
    T width = end_w - start_w;
    T height = end_h - start_h;
    if (!aligned) {  // the legacy behaviour: degenerate boxes become 1x1
      width = max_of(width, static_cast<T>(1.));
      height = max_of(height, static_cast<T>(1.));
    }
    bin_h = height / static_cast<T>(pooled_height);
    bin_w = width / static_cast<T>(pooled_width);
    grid_h = sampling_ratio > 0 ? static_cast<int>(sampling_ratio)
                                : static_cast<int>(ceil_of(height / static_cast<T>(pooled_height)));
    grid_w = sampling_ratio > 0 ? static_cast<int>(sampling_ratio)
                                : static_cast<int>(ceil_of(width / static_cast<T>(pooled_width)));
  }

  MRCNN_HOST_DEVICE bool samples_nothing() const { return grid_h <= 0 || grid_w <= 0; }
  // The divisor of a bin's average: the forward pass makes an empty grid divide by 1.
  MRCNN_HOST_DEVICE int samples_per_bin() const { return grid_h * grid_w; }

  MRCNN_HOST_DEVICE T sample_y(int64_t ph, int iy) const {
    return start_h + static_cast<T>(ph) * bin_h +
           static_cast<T>(iy + .5f) * bin_h / static_cast<T>(grid_h);
  }
  MRCNN_HOST_DEVICE T sample_x(int64_t pw, int ix) const {
    return start_w + static_cast<T>(pw) * bin_w +
           static_cast<T>(ix + .5f) * bin_w / static_cast<T>(grid_w);
  }
};

// One sampling point: the four neighbouring pixels (offsets into an H*W plane) and their
// weights. valid is false for points more than one pixel outside the map: they contribute
// nothing to the forward pass (zero weights at offset 0) and receive nothing backward.
template <typename T>
struct SamplePoint {
  int64_t pos1, pos2, pos3, pos4;
  T w1, w2, w3, w4;
  bool valid;
};

template <typename T>
MRCNN_HOST_DEVICE SamplePoint<T> bilinear_point(int64_t height, int64_t width, T y, T x) {
  SamplePoint<T> p{0, 0, 0, 0, T(0), T(0), T(0), T(0), false};
  // Written as "not inside" so that NaN coordinates land here too.
  if (!(y >= -1.0 && y <= static_cast<T>(height) && x >= -1.0 && x <= static_cast<T>(width))) {
    return p;
  }
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int>(y);
  int64_t x_low = static_cast<int>(x);
  int64_t y_high = 0;
  int64_t x_high = 0;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const T ly = y - static_cast<T>(y_low);
  const T lx = x - static_cast<T>(x_low);
  const T hy = static_cast<T>(1. - ly);
  const T hx = static_cast<T>(1. - lx);
  p.w1 = hy * hx;
  p.w2 = hy * lx;
  p.w3 = ly * hx;
  p.w4 = ly * lx;
  p.pos1 = y_low * width + x_low;
  p.pos2 = y_low * width + x_high;
  p.pos3 = y_high * width + x_low;
  p.pos4 = y_high * width + x_high;
  p.valid = true;
  return p;
}

}  // namespace mrcnn::ops::detail
