#include "engine/model/cropped_masks.h"

#include <ATen/ATen.h>

#include "engine/model/device_copy.h"

namespace mrcnn::model {

CroppedMasks toDevice(const CroppedMasks& masks, const c10::Device& device) {
  CroppedMasks out = masks;
  for (at::Tensor* t : {&out.windows, &out.offsets, &out.data})
    if (t->defined()) *t = copyToDevice(*t, device);
  return out;
}

CroppedMasks selectMasks(const CroppedMasks& masks, const at::Tensor& rows) {
  CroppedMasks out = masks;
  out.windows = masks.windows.index_select(0, rows);
  out.offsets = masks.offsets.index_select(0, rows);
  return out;
}

}  // namespace mrcnn::model
