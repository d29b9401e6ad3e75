// Ground-truth masks as the loader keeps them: each instance's mask cropped to the window that
// holds its pixels, so that an image with many small objects costs what its objects cover, not
// its size times their number (800 objects on a 1024 x 1024 image: under a megabyte instead of
// 800). The mask loss reads its targets from the crops (ops::mask_targets_cropped).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace mrcnn::model {

struct CroppedMasks {
  at::Tensor windows;  // int64 [N, 4]: x0, y0, width, height of each crop in the image
  at::Tensor offsets;  // int64 [N]: where each crop starts in `data`
  at::Tensor data;     // uint8: the crops back to back, each row-major width x height
  int64_t height = 0;  // the image's
  int64_t width = 0;
  int64_t size() const { return windows.defined() ? windows.size(0) : 0; }
};

// The same crops on `device` (copies that do not wait where the source allows it).
CroppedMasks toDevice(const CroppedMasks& masks, const c10::Device& device);

// The instances `rows` only (the crops' bytes are shared).
CroppedMasks selectMasks(const CroppedMasks& masks, const at::Tensor& rows);

}  // namespace mrcnn::model
