// CUDA kernels of mrcnn::roi_align and mrcnn::_roi_align_backward: one thread per output
// bin; the backward pass scatters with atomic adds (so its float sums are not ordered, and
// not bit-reproducible from run to run). Half and bfloat16 are computed in float.
// Channels-last (NHWC) features are read in place: consecutive threads then take a bin's
// consecutive channels (coalesced reads and writes), and the output or the input gradient is
// channels-last too.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <ATen/cuda/Atomic.cuh>

#include "engine/ops/checks.h"
#include "engine/ops/cuda/launch.cuh"
#include "engine/ops/roi_align_geometry.h"

namespace mrcnn::ops::cuda {
namespace {

// One output element's place: (n, c, ph, pw) from its linear index in the output's layout,
// and where channel c of image b starts and how far apart its pixels are in the features.
struct BinIndex {
  int64_t n, c, ph, pw;
};

__device__ inline BinIndex bin_index(int64_t index, bool channels_last, int64_t channels,
                                     int64_t pooled_height, int64_t pooled_width) {
  if (channels_last) {  // (n, ph, pw, c)
    const int64_t c = index % channels;
    const int64_t pw = (index / channels) % pooled_width;
    const int64_t ph = (index / channels / pooled_width) % pooled_height;
    return {index / channels / pooled_width / pooled_height, c, ph, pw};
  }
  const int64_t pw = index % pooled_width;
  const int64_t ph = (index / pooled_width) % pooled_height;
  const int64_t c = (index / pooled_width / pooled_height) % channels;
  return {index / pooled_width / pooled_height / channels, c, ph, pw};
}

// Offset of (b, c, pixel 0) and the step between pixels of one channel.
__device__ inline int64_t plane_start(bool channels_last, int64_t b, int64_t c, int64_t channels,
                                      int64_t height, int64_t width) {
  return channels_last ? b * channels * height * width + c : (b * channels + c) * height * width;
}

template <typename T, typename A>
__global__ void roi_align_forward_kernel(int64_t total, const T* __restrict__ input,
                                         const A* __restrict__ rois, A spatial_scale,
                                         int64_t channels, int64_t height, int64_t width,
                                         int64_t pooled_height, int64_t pooled_width,
                                         int64_t sampling_ratio, bool aligned, bool channels_last,
                                         T* __restrict__ output) {
  const int64_t step = channels_last ? channels : 1;
  MRCNN_GRID_STRIDE_LOOP(index, total) {
    const BinIndex i = bin_index(index, channels_last, channels, pooled_height, pooled_width);
    const int64_t n = i.n, c = i.c, ph = i.ph, pw = i.pw;
    const detail::RoiGeometry<A> g(rois + n * 5, spatial_scale, pooled_height, pooled_width,
                                   sampling_ratio, aligned);
    const T* in = input + plane_start(channels_last, g.batch_index, c, channels, height, width);
    A sum = 0;
    if (!g.samples_nothing()) {
      for (int iy = 0; iy < g.grid_h; ++iy) {
        const A y = g.sample_y(ph, iy);
        for (int ix = 0; ix < g.grid_w; ++ix) {
          const auto p = detail::bilinear_point(height, width, y, g.sample_x(pw, ix));
          if (!p.valid) continue;
          sum += p.w1 * static_cast<A>(in[p.pos1 * step]) +
                 p.w2 * static_cast<A>(in[p.pos2 * step]) +
                 p.w3 * static_cast<A>(in[p.pos3 * step]) +
                 p.w4 * static_cast<A>(in[p.pos4 * step]);
        }
      }
    }
    const int samples = g.samples_per_bin();
    output[index] = static_cast<T>(sum / static_cast<A>(samples > 1 ? samples : 1));
  }
}

template <typename T, typename A>
__global__ void roi_align_backward_kernel(int64_t total, const T* __restrict__ grad, int64_t sn,
                                          int64_t sc, int64_t sh, int64_t sw,
                                          const A* __restrict__ rois, A spatial_scale,
                                          int64_t channels, int64_t height, int64_t width,
                                          int64_t pooled_height, int64_t pooled_width,
                                          int64_t sampling_ratio, bool aligned, bool channels_last,
                                          A* __restrict__ grad_input) {
  const int64_t step = channels_last ? channels : 1;
  MRCNN_GRID_STRIDE_LOOP(index, total) {
    const BinIndex i = bin_index(index, channels_last, channels, pooled_height, pooled_width);
    const int64_t n = i.n, c = i.c, ph = i.ph, pw = i.pw;
    const detail::RoiGeometry<A> g(rois + n * 5, spatial_scale, pooled_height, pooled_width,
                                   sampling_ratio, aligned);
    if (g.samples_nothing()) continue;
    const A g_bin = static_cast<A>(grad[n * sn + c * sc + ph * sh + pw * sw]);
    const A count = static_cast<A>(g.samples_per_bin());
    A* gi = grad_input + plane_start(channels_last, g.batch_index, c, channels, height, width);
    for (int iy = 0; iy < g.grid_h; ++iy) {
      const A y = g.sample_y(ph, iy);
      for (int ix = 0; ix < g.grid_w; ++ix) {
        const auto p = detail::bilinear_point(height, width, y, g.sample_x(pw, ix));
        if (!p.valid) continue;
        gpuAtomicAdd(gi + p.pos1 * step, g_bin * p.w1 / count);
        gpuAtomicAdd(gi + p.pos2 * step, g_bin * p.w2 / count);
        gpuAtomicAdd(gi + p.pos3 * step, g_bin * p.w3 / count);
        gpuAtomicAdd(gi + p.pos4 * step, g_bin * p.w4 / count);
      }
    }
  }
}

at::Tensor roi_align_forward_cuda(const at::Tensor& input, const at::Tensor& rois,
                                  double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                  int64_t sampling_ratio, bool aligned) {
  detail::check_roi_align_args("roi_align", input, "input", rois, pooled_height, pooled_width);
  TORCH_CHECK(input.is_cuda(), "roi_align: the CUDA kernel got a ", input.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(input.device());
  const int64_t num_rois = rois.size(0);
  const int64_t channels = input.size(1);
  const at::MemoryFormat layout = input.suggest_memory_format();
  const bool channels_last = layout == at::MemoryFormat::ChannelsLast;
  // (at::zeros takes no memory format: an empty tensor in the layout, zeroed.)
  at::Tensor output = at::empty({num_rois, channels, pooled_height, pooled_width},
                                input.options().memory_format(layout))
                          .zero_();
  if (output.numel() == 0) return output;
  TORCH_CHECK(input.size(2) > 0 && input.size(3) > 0, "roi_align: input has an empty spatial size ",
              input.sizes());
  const at::Tensor in = input.contiguous(layout);
  const int64_t total = output.numel();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, input.scalar_type(), "roi_align_forward_cuda", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const at::Tensor r = rois.to(c10::CppTypeToScalarType<acc_t>::value).contiguous();
        roi_align_forward_kernel<scalar_t, acc_t><<<blocks_for(total), kThreads, 0, stream>>>(
            total, in.const_data_ptr<scalar_t>(), r.const_data_ptr<acc_t>(),
            static_cast<acc_t>(spatial_scale), channels, input.size(2), input.size(3),
            pooled_height, pooled_width, sampling_ratio, aligned, channels_last,
            output.mutable_data_ptr<scalar_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
  return output;
}

at::Tensor roi_align_backward_cuda(const at::Tensor& grad, const at::Tensor& rois,
                                   double spatial_scale, int64_t pooled_height,
                                   int64_t pooled_width, int64_t batch_size, int64_t channels,
                                   int64_t height, int64_t width, int64_t sampling_ratio,
                                   bool aligned, bool channels_last) {
  detail::check_roi_align_args("roi_align_backward", grad, "grad", rois, pooled_height,
                               pooled_width);
  TORCH_CHECK(grad.is_cuda(), "roi_align_backward: the CUDA kernel got a ", grad.device(),
              " tensor");
  TORCH_CHECK(grad.size(0) == rois.size(0) && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width,
              "roi_align_backward: grad must be [K, C, pooled_height, pooled_width] = [",
              rois.size(0), ", ", channels, ", ", pooled_height, ", ", pooled_width, "], got ",
              grad.sizes());
  const c10::cuda::CUDAGuard device_guard(grad.device());
  const bool reduced = grad.scalar_type() == at::kHalf || grad.scalar_type() == at::kBFloat16;
  // Half and bfloat16 gradients are summed in float, then rounded once.
  at::Tensor grad_input = at::empty(
      {batch_size, channels, height, width},
      grad.options()
          .dtype(reduced ? at::kFloat : grad.scalar_type())
          .memory_format(channels_last ? at::MemoryFormat::ChannelsLast
                                       : at::MemoryFormat::Contiguous))
          .zero_();
  if (grad.numel() == 0 || grad_input.numel() == 0) return grad_input.to(grad.scalar_type());
  const int64_t total = grad.numel();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  // Threads walk the bins in grad_input's layout (the index is decoded as such; grad is read
  // through its strides, whatever its own layout).
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, grad.scalar_type(), "roi_align_backward_cuda", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const at::Tensor r = rois.to(c10::CppTypeToScalarType<acc_t>::value).contiguous();
        roi_align_backward_kernel<scalar_t, acc_t><<<blocks_for(total), kThreads, 0, stream>>>(
            total, grad.const_data_ptr<scalar_t>(), grad.stride(0), grad.stride(1), grad.stride(2),
            grad.stride(3), r.const_data_ptr<acc_t>(), static_cast<acc_t>(spatial_scale), channels,
            height, width, pooled_height, pooled_width, sampling_ratio, aligned, channels_last,
            grad_input.mutable_data_ptr<acc_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
  return grad_input.to(grad.scalar_type());
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("roi_align", TORCH_FN(mrcnn::ops::cuda::roi_align_forward_cuda));
  m.impl("_roi_align_backward", TORCH_FN(mrcnn::ops::cuda::roi_align_backward_cuda));
}
