// The positions where a 1-D mask is set, when how many there are is already known on the
// host: what at::where(mask)[0] gives, in the same increasing order, without the host
// waiting for the device to count them (a where on a GPU copies the count back first).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace mrcnn::model {

// mask: 1-D bool or uint8; count: how many elements are set (the caller read it, e.g. in
// one copy with other counts). Each set element i goes to slot (number set before it); the
// unset ones all go to a spare slot past the end, which is cut off.
inline at::Tensor countedIndices(const at::Tensor& mask, int64_t count) {
  const at::Tensor set = mask.to(at::kBool);
  const at::Tensor slot = at::where(set, set.cumsum(0) - 1, count);
  const at::Tensor position = at::arange(set.numel(), set.options().dtype(at::kLong));
  return at::empty({count + 1}, position.options())
      .scatter_(0, slot, position)
      .narrow(0, 0, count);
}

}  // namespace mrcnn::model
