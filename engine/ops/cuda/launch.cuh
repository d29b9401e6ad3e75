// Launch geometry shared by the CUDA kernels: grid-stride loops over `total` items.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mrcnn::ops::cuda {

constexpr int kThreads = 256;

inline unsigned int blocks_for(int64_t total) {
  return static_cast<unsigned int>(
      std::clamp<int64_t>((total + kThreads - 1) / kThreads, int64_t{1}, int64_t{65535}));
}

#define MRCNN_GRID_STRIDE_LOOP(i, total)                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace mrcnn::ops::cuda
