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

// One sampling point's four neighbouring pixels (rows y_low, y_high; columns x_low, x_high)
// and their weights. valid is false for points more than one pixel outside the map: they
// contribute nothing to the forward pass (zero weights at pixel (0, 0)) and receive nothing
// backward.
template <typename T>
struct BilinearCorners {
  int64_t y_low, x_low, y_high, x_high;
  T w1, w2, w3, w4;  // (y_low, x_low), (y_low, x_high), (y_high, x_low), (y_high, x_high)
  bool valid;
};

template <typename T>
MRCNN_HOST_DEVICE BilinearCorners<T> bilinear_corners(int64_t height, int64_t width, T y, T x) {
  BilinearCorners<T> c{0, 0, 0, 0, T(0), T(0), T(0), T(0), false};
  // Written as "not inside" so that NaN coordinates land here too.
  if (!(y >= -1.0 && y <= static_cast<T>(height) && x >= -1.0 && x <= static_cast<T>(width))) {
    return c;
  }
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  c.y_low = static_cast<int>(y);
  c.x_low = static_cast<int>(x);
  if (c.y_low >= height - 1) {
    c.y_high = c.y_low = height - 1;
    y = static_cast<T>(c.y_low);
  } else {
    c.y_high = c.y_low + 1;
  }
  if (c.x_low >= width - 1) {
    c.x_high = c.x_low = width - 1;
    x = static_cast<T>(c.x_low);
  } else {
    c.x_high = c.x_low + 1;
  }
  const T ly = y - static_cast<T>(c.y_low);
  const T lx = x - static_cast<T>(c.x_low);
  const T hy = static_cast<T>(1. - ly);
  const T hx = static_cast<T>(1. - lx);
  c.w1 = hy * hx;
  c.w2 = hy * lx;
  c.w3 = ly * hx;
  c.w4 = ly * lx;
  c.valid = true;
  return c;
}

// The same point as offsets into an H*W plane (invalid: zero weights at offset 0).
template <typename T>
struct SamplePoint {
  int64_t pos1, pos2, pos3, pos4;
  T w1, w2, w3, w4;
  bool valid;
};

template <typename T>
MRCNN_HOST_DEVICE SamplePoint<T> bilinear_point(int64_t height, int64_t width, T y, T x) {
  const BilinearCorners<T> c = bilinear_corners(height, width, y, x);
  return {c.y_low * width + c.x_low,
          c.y_low * width + c.x_high,
          c.y_high * width + c.x_low,
          c.y_high * width + c.x_high,
          c.w1,
          c.w2,
          c.w3,
          c.w4,
          c.valid};
}

}  // namespace mrcnn::ops::detail
