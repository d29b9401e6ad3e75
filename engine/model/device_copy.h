// A host tensor's copy on a device that does not make the host wait: to a GPU through pinned
// memory (LibTorch's caching host allocator keeps the pinned block until its copy is done, so
// the source may go at once), elsewhere a plain copy (or the tensor itself, already there).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace mrcnn::model {

inline at::Tensor copyToDevice(const at::Tensor& t, const c10::Device& device) {
  if (device.is_cuda() && t.is_cpu() && t.numel() > 0) {
    return t.pin_memory().to(device, /*non_blocking=*/true);
  }
  return t.to(device);
}

}  // namespace mrcnn::model
