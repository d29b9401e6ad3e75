// Where mrcnn::mask_targets and mrcnn::mask_targets_cropped read a ground-truth mask from,
// shared by the CPU and CUDA kernels: whole masks [G, H, W], or each mask as the loader keeps
// it, the crop of its window (0 outside it). Both give a mask's value at a pixel (y, x) of the
// image, so the kernels sample either one the same way, bit for bit.
#pragma once

#include <cstdint>

#include "engine/ops/host_device.h"

namespace mrcnn::ops::detail {

// One whole mask: an H*W plane.
template <typename MaskT>
struct PlaneMask {
  const MaskT* plane;
  int64_t width;
  MRCNN_HOST_DEVICE MaskT operator()(int64_t y, int64_t x) const { return plane[y * width + x]; }
};

// Whole masks back to back, [G, H, W].
template <typename MaskT>
struct WholeMasks {
  const MaskT* data;
  int64_t count;
  int64_t height, width;

  // Whether mask g can be read (the CUDA kernel checks this instead of synchronising).
  MRCNN_HOST_DEVICE bool readable(int64_t g) const { return g >= 0 && g < count; }
  MRCNN_HOST_DEVICE PlaneMask<MaskT> operator[](int64_t g) const {
    return {data + g * height * width, width};
  }
};

// One mask as its crop: the bytes of its window (x0, y0, w x h, row-major); every pixel
// outside the window is 0.
struct CropMask {
  const uint8_t* crop;
  int64_t x0, y0, w, h;
  MRCNN_HOST_DEVICE uint8_t operator()(int64_t y, int64_t x) const {
    // Inside the window when 0 <= y - y0 < h and 0 <= x - x0 < w: one unsigned compare each.
    const auto dy = static_cast<uint64_t>(y - y0), dx = static_cast<uint64_t>(x - x0);
    return dy < static_cast<uint64_t>(h) && dx < static_cast<uint64_t>(w)
               ? crop[static_cast<int64_t>(dy) * w + static_cast<int64_t>(dx)]
               : uint8_t{0};
  }
};

// The crops of G masks: windows int64 [G, 4] (x0, y0, width, height), offsets int64 [G] into
// data, uint8 bytes.
struct CroppedMaskSet {
  const uint8_t* data;
  int64_t bytes;  // data's size
  const int64_t* windows;
  const int64_t* offsets;
  int64_t count;
  int64_t height, width;  // the image's

  // Whether mask g exists and its window lies in the image and its crop in data.
  MRCNN_HOST_DEVICE bool readable(int64_t g) const {
    if (g < 0 || g >= count) return false;
    const int64_t* win = windows + 4 * g;
    return win[0] >= 0 && win[1] >= 0 && win[2] >= 0 && win[3] >= 0 && win[0] + win[2] <= width &&
           win[1] + win[3] <= height && offsets[g] >= 0 && offsets[g] + win[2] * win[3] <= bytes;
  }
  MRCNN_HOST_DEVICE CropMask operator[](int64_t g) const {
    const int64_t* win = windows + 4 * g;
    return {data + offsets[g], win[0], win[1], win[2], win[3]};
  }
};

}  // namespace mrcnn::ops::detail
