#include "engine/model/cropped_masks.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstring>

namespace mrcnn::model {

at::Tensor expandMasks(const CroppedMasks& masks, const at::Tensor& rows) {
  const at::Tensor r = rows.to(at::kCPU, at::kLong).contiguous();
  const int64_t k = r.numel(), h = masks.height, w = masks.width;
  at::Tensor out = at::zeros({k, h, w}, at::TensorOptions().dtype(at::kByte));
  if (k == 0) return out;
  const at::Tensor windows = masks.windows.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor offsets = masks.offsets.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor data = masks.data.to(at::kCPU).contiguous();
  const int64_t* row = r.const_data_ptr<int64_t>();
  const int64_t* win = windows.const_data_ptr<int64_t>();
  const int64_t* off = offsets.const_data_ptr<int64_t>();
  const uint8_t* bytes = data.const_data_ptr<uint8_t>();
  uint8_t* dst = out.mutable_data_ptr<uint8_t>();
  for (int64_t j = 0; j < k; ++j) {
    const int64_t i = row[j];
    TORCH_CHECK(i >= 0 && i < masks.size(), "expandMasks: instance ", i, " of ", masks.size());
    const int64_t x0 = win[4 * i], y0 = win[4 * i + 1], cw = win[4 * i + 2], ch = win[4 * i + 3];
    TORCH_CHECK(x0 >= 0 && y0 >= 0 && cw >= 0 && ch >= 0 && x0 + cw <= w && y0 + ch <= h &&
                    off[i] + cw * ch <= data.numel(),
                "expandMasks: instance ", i, "'s window (", x0, ", ", y0, ", ", cw, " x ", ch,
                ") does not fit its ", w, " x ", h, " image or the crops");
    for (int64_t y = 0; y < ch; ++y)
      std::memcpy(dst + (j * h + y0 + y) * w + x0, bytes + off[i] + y * cw, static_cast<size_t>(cw));
  }
  return out;
}

CroppedMasks selectMasks(const CroppedMasks& masks, const at::Tensor& rows) {
  CroppedMasks out = masks;
  out.windows = masks.windows.index_select(0, rows);
  out.offsets = masks.offsets.index_select(0, rows);
  return out;
}

}  // namespace mrcnn::model
