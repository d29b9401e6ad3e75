// CUDA kernels of mrcnn::paste_masks and mrcnn::paste_masks_binary: a small kernel computes
// each mask's window in the image (paste_masks_geometry.h), then one thread per output pixel
// writes zero outside its mask's window and the blend of four padded-mask pixels inside.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <type_traits>

#include "engine/ops/cuda/launch.cuh"
#include "engine/ops/paste_masks_geometry.h"

namespace mrcnn::ops::cuda {
namespace {

using detail::PasteWindow;

template <typename B>
__global__ void paste_windows_kernel(int64_t n, const B* __restrict__ boxes, B scale,
                                     int64_t height, int64_t width,
                                     PasteWindow* __restrict__ windows) {
  MRCNN_GRID_STRIDE_LOOP(i, n) {
    windows[i] = detail::paste_window(boxes + i * 4, scale, height, width);
  }
}

template <typename T, typename Out>
__global__ void paste_kernel(int64_t total, const T* __restrict__ padded, int64_t side,
                             const PasteWindow* __restrict__ windows, int64_t height, int64_t width,
                             T threshold, Out* __restrict__ out) {
  MRCNN_GRID_STRIDE_LOOP(index, total) {
    const int64_t x = index % width;
    const int64_t y = (index / width) % height;
    const int64_t n = index / width / height;
    const PasteWindow w = windows[n];
    T v = 0;
    if (x >= w.x_begin && x < w.x_end && y >= w.y_begin && y < w.y_end) {
      const auto row = detail::linear_tap<T>(y - w.y0, side, w.h);
      const auto col = detail::linear_tap<T>(x - w.x0, side, w.w);
      const T* plane = padded + n * side * side;
      v = detail::blend(plane + row.i0 * side, plane + row.i1 * side, col, row);
    }
    if constexpr (std::is_same_v<Out, uint8_t>) {
      out[index] = v > threshold ? 1 : 0;
    } else {
      out[index] = v;
    }
  }
}

at::Tensor paste_cuda(const char* op, const at::Tensor& masks, const at::Tensor& boxes,
                      int64_t height, int64_t width, int64_t padding,
                      std::optional<double> threshold) {
  const int64_t m = detail::check_paste_masks_args(op, masks, boxes, height, width, padding);
  TORCH_CHECK(masks.is_cuda(), op, ": the CUDA kernel got a ", masks.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(masks.device());
  const int64_t n = masks.size(0);
  at::Tensor probs = masks.reshape({n, m, m});
  if (probs.scalar_type() == at::kHalf || probs.scalar_type() == at::kBFloat16) {
    probs = probs.to(at::kFloat);
  }
  at::Tensor out = at::empty({n, height, width},
                             probs.options().dtype(threshold ? at::kByte : probs.scalar_type()));
  if (out.numel() == 0) return out;

  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const double scale = detail::paste_scale(m, padding);
  at::Tensor windows = at::empty({n, 8}, boxes.options().dtype(at::kLong));
  auto* win = reinterpret_cast<PasteWindow*>(windows.mutable_data_ptr<int64_t>());
  const at::Tensor b = boxes.contiguous();
  AT_DISPATCH_FLOATING_TYPES(b.scalar_type(), "paste_masks_windows_cuda", [&] {
    paste_windows_kernel<scalar_t><<<blocks_for(n), kThreads, 0, stream>>>(
        n, b.const_data_ptr<scalar_t>(), static_cast<scalar_t>(scale), height, width, win);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });

  const at::Tensor padded =
      at::constant_pad_nd(probs, {padding, padding, padding, padding}, 0).contiguous();
  const int64_t side = m + 2 * padding;
  const int64_t total = out.numel();
  AT_DISPATCH_FLOATING_TYPES(padded.scalar_type(), "paste_masks_cuda", [&] {
    const scalar_t* p = padded.const_data_ptr<scalar_t>();
    if (threshold) {
      paste_kernel<scalar_t, uint8_t><<<blocks_for(total), kThreads, 0, stream>>>(
          total, p, side, win, height, width, static_cast<scalar_t>(*threshold),
          out.mutable_data_ptr<uint8_t>());
    } else {
      paste_kernel<scalar_t, scalar_t><<<blocks_for(total), kThreads, 0, stream>>>(
          total, p, side, win, height, width, scalar_t(0), out.mutable_data_ptr<scalar_t>());
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

at::Tensor paste_masks_cuda(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                            int64_t width, int64_t padding) {
  return paste_cuda("paste_masks", masks, boxes, height, width, padding, std::nullopt);
}

at::Tensor paste_masks_binary_cuda(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                                   int64_t width, double threshold, int64_t padding) {
  return paste_cuda("paste_masks_binary", masks, boxes, height, width, padding, threshold);
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("paste_masks", TORCH_FN(mrcnn::ops::cuda::paste_masks_cuda));
  m.impl("paste_masks_binary", TORCH_FN(mrcnn::ops::cuda::paste_masks_binary_cuda));
}
