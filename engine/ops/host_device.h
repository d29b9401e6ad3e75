// Lets the scalar arithmetic of an op live in one header compiled into both the CPU kernel
// (host compiler) and the CUDA kernel (nvcc), so the two cannot drift apart.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define MRCNN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MRCNN_HOST_DEVICE inline
#endif

namespace mrcnn::ops::detail {

// The device overloads of the C math functions are global; the host ones we want are std::.
template <typename T>
MRCNN_HOST_DEVICE T ceil_of(T v) {
#if defined(__CUDA_ARCH__)
  return ::ceil(v);
#else
  return std::ceil(v);
#endif
}

template <typename T>
MRCNN_HOST_DEVICE T exp_of(T v) {
#if defined(__CUDA_ARCH__)
  return ::exp(v);
#else
  return std::exp(v);
#endif
}

template <typename T>
MRCNN_HOST_DEVICE T log_of(T v) {
#if defined(__CUDA_ARCH__)
  return ::log(v);
#else
  return std::log(v);
#endif
}

// a < b ? a : b and a > b ? a : b, with std::min/std::max's argument order (a NaN first
// argument is kept).
template <typename T>
MRCNN_HOST_DEVICE T min_of(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
MRCNN_HOST_DEVICE T max_of(T a, T b) {
  return a < b ? b : a;
}

}  // namespace mrcnn::ops::detail
