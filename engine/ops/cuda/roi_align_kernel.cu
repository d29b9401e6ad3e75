// CUDA kernels of mrcnn::roi_align and mrcnn::multilevel_roi_align (forward and backward):
// one thread per output bin (multilevel: each reads the map its RoI's level names, from a
// table passed by value). The backward pass scatters with atomic adds (so its float sums are
// not ordered, and not bit-reproducible from run to run). Half and bfloat16 are computed in
// float. Channels-last (NHWC) features are read in place: consecutive threads then take a
// bin's consecutive channels (coalesced reads and writes), and the output or the input
// gradient is channels-last too.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <ATen/cuda/Atomic.cuh>
#include <limits>
#include <vector>

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

// The average of one bin (ph, pw) over its sampling points, read from channel plane `in`
// whose pixels are `step` apart.
template <typename T, typename A>
__device__ inline A pool_bin(const T* in, const detail::RoiGeometry<A>& g, int64_t ph, int64_t pw,
                             int64_t height, int64_t width, int64_t step) {
  A sum = 0;
  if (!g.samples_nothing()) {
    for (int iy = 0; iy < g.grid_h; ++iy) {
      const A y = g.sample_y(ph, iy);
      for (int ix = 0; ix < g.grid_w; ++ix) {
        const auto p = detail::bilinear_point(height, width, y, g.sample_x(pw, ix));
        if (!p.valid) continue;
        sum += p.w1 * static_cast<A>(in[p.pos1 * step]) + p.w2 * static_cast<A>(in[p.pos2 * step]) +
               p.w3 * static_cast<A>(in[p.pos3 * step]) + p.w4 * static_cast<A>(in[p.pos4 * step]);
      }
    }
  }
  const int samples = g.samples_per_bin();
  return sum / static_cast<A>(samples > 1 ? samples : 1);
}

// One bin's gradient g_bin spread over its sampling points' pixels in channel plane `gi`.
template <typename A>
__device__ inline void scatter_bin(A* gi, const detail::RoiGeometry<A>& g, int64_t ph, int64_t pw,
                                   int64_t height, int64_t width, int64_t step, A g_bin) {
  if (g.samples_nothing()) return;
  const A count = static_cast<A>(g.samples_per_bin());
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
    const detail::RoiGeometry<A> g(rois + i.n * 5, spatial_scale, pooled_height, pooled_width,
                                   sampling_ratio, aligned);
    const T* in = input + plane_start(channels_last, g.batch_index, i.c, channels, height, width);
    output[index] = static_cast<T>(pool_bin(in, g, i.ph, i.pw, height, width, step));
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
    const detail::RoiGeometry<A> g(rois + i.n * 5, spatial_scale, pooled_height, pooled_width,
                                   sampling_ratio, aligned);
    const A g_bin = static_cast<A>(grad[i.n * sn + i.c * sc + i.ph * sh + i.pw * sw]);
    A* gi = grad_input + plane_start(channels_last, g.batch_index, i.c, channels, height, width);
    scatter_bin(gi, g, i.ph, i.pw, height, width, step, g_bin);
  }
}

// multilevel_roi_align's maps, passed by value to its kernels: each map's data (the features
// forward, their gradient backward), size and scale.
template <typename P, typename A>
struct MapTable {
  P data[kMaxRoIAlignLevels];
  int64_t height[kMaxRoIAlignLevels];
  int64_t width[kMaxRoIAlignLevels];
  A scale[kMaxRoIAlignLevels];
  int64_t count;
};

// As roi_align_forward_kernel, each RoI on the map its level names; a level outside the
// table gives NaN (no host check on a GPU).
template <typename T, typename A>
__global__ void multilevel_roi_align_forward_kernel(int64_t total, MapTable<const T*, A> maps,
                                                    const A* __restrict__ rois,
                                                    const int64_t* __restrict__ levels,
                                                    int64_t channels, int64_t pooled_height,
                                                    int64_t pooled_width, int64_t sampling_ratio,
                                                    bool aligned, bool channels_last,
                                                    T* __restrict__ output) {
  const int64_t step = channels_last ? channels : 1;
  MRCNN_GRID_STRIDE_LOOP(index, total) {
    const BinIndex i = bin_index(index, channels_last, channels, pooled_height, pooled_width);
    const int64_t l = levels[i.n];
    if (l < 0 || l >= maps.count) {
      output[index] = static_cast<T>(std::numeric_limits<A>::quiet_NaN());
      continue;
    }
    const detail::RoiGeometry<A> g(rois + i.n * 5, maps.scale[l], pooled_height, pooled_width,
                                   sampling_ratio, aligned);
    const T* in = maps.data[l] + plane_start(channels_last, g.batch_index, i.c, channels,
                                             maps.height[l], maps.width[l]);
    output[index] =
        static_cast<T>(pool_bin(in, g, i.ph, i.pw, maps.height[l], maps.width[l], step));
  }
}

// As roi_align_backward_kernel into the gradient of the RoI's map; a level outside the table
// scatters nothing.
template <typename T, typename A>
__global__ void multilevel_roi_align_backward_kernel(
    int64_t total, const T* __restrict__ grad, int64_t sn, int64_t sc, int64_t sh, int64_t sw,
    MapTable<A*, A> maps, const A* __restrict__ rois, const int64_t* __restrict__ levels,
    int64_t channels, int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
    bool aligned, bool channels_last) {
  const int64_t step = channels_last ? channels : 1;
  MRCNN_GRID_STRIDE_LOOP(index, total) {
    const BinIndex i = bin_index(index, channels_last, channels, pooled_height, pooled_width);
    const int64_t l = levels[i.n];
    if (l < 0 || l >= maps.count) continue;
    const detail::RoiGeometry<A> g(rois + i.n * 5, maps.scale[l], pooled_height, pooled_width,
                                   sampling_ratio, aligned);
    const A g_bin = static_cast<A>(grad[i.n * sn + i.c * sc + i.ph * sh + i.pw * sw]);
    A* gi = maps.data[l] +
            plane_start(channels_last, g.batch_index, i.c, channels, maps.height[l], maps.width[l]);
    scatter_bin(gi, g, i.ph, i.pw, maps.height[l], maps.width[l], step, g_bin);
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
  at::Tensor grad_input =
      at::empty({batch_size, channels, height, width},
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

at::Tensor multilevel_roi_align_forward_cuda(at::TensorList features, const at::Tensor& rois,
                                             const at::Tensor& levels, at::ArrayRef<double> scales,
                                             int64_t pooled_height, int64_t pooled_width,
                                             int64_t sampling_ratio, bool aligned) {
  constexpr const char* op = "multilevel_roi_align";
  detail::check_multilevel_roi_align_args(op, features, rois, levels, scales, pooled_height,
                                          pooled_width);
  const at::Tensor& first = features[0];
  TORCH_CHECK(first.is_cuda(), op, ": the CUDA kernel got a ", first.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(first.device());
  const int64_t channels = first.size(1);
  const at::MemoryFormat layout = first.suggest_memory_format();
  const bool channels_last = layout == at::MemoryFormat::ChannelsLast;
  at::Tensor output = at::empty({rois.size(0), channels, pooled_height, pooled_width},
                                first.options().memory_format(layout))
                          .zero_();
  if (output.numel() == 0) return output;
  std::vector<at::Tensor> maps;  // all in the first map's layout
  for (size_t l = 0; l < features.size(); ++l) {
    TORCH_CHECK(features[l].size(2) > 0 && features[l].size(3) > 0, op, ": features[", l,
                "] has an empty spatial size ", features[l].sizes());
    maps.push_back(features[l].contiguous(layout));
  }
  const at::Tensor lv = levels.contiguous();
  const int64_t total = output.numel();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, first.scalar_type(), "multilevel_roi_align_forward_cuda", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        const at::Tensor r = rois.to(c10::CppTypeToScalarType<acc_t>::value).contiguous();
        MapTable<const scalar_t*, acc_t> table{};
        table.count = static_cast<int64_t>(maps.size());
        for (size_t l = 0; l < maps.size(); ++l) {
          table.data[l] = maps[l].const_data_ptr<scalar_t>();
          table.height[l] = maps[l].size(2);
          table.width[l] = maps[l].size(3);
          table.scale[l] = static_cast<acc_t>(scales[l]);
        }
        multilevel_roi_align_forward_kernel<scalar_t, acc_t>
            <<<blocks_for(total), kThreads, 0, stream>>>(
                total, table, r.const_data_ptr<acc_t>(), lv.const_data_ptr<int64_t>(), channels,
                pooled_height, pooled_width, sampling_ratio, aligned, channels_last,
                output.mutable_data_ptr<scalar_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
  return output;
}

std::vector<at::Tensor> multilevel_roi_align_backward_cuda(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> scales, int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
    int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths, int64_t sampling_ratio,
    bool aligned, bool channels_last) {
  constexpr const char* op = "multilevel_roi_align_backward";
  detail::check_multilevel_roi_align_backward_args(op, grad, rois, levels, scales, pooled_height,
                                                   pooled_width, channels, heights, widths);
  TORCH_CHECK(grad.is_cuda(), op, ": the CUDA kernel got a ", grad.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(grad.device());
  const bool reduced = grad.scalar_type() == at::kHalf || grad.scalar_type() == at::kBFloat16;
  // Half and bfloat16 gradients are summed in float, then rounded once.
  const at::TensorOptions options =
      grad.options()
          .dtype(reduced ? at::kFloat : grad.scalar_type())
          .memory_format(channels_last ? at::MemoryFormat::ChannelsLast
                                       : at::MemoryFormat::Contiguous);
  std::vector<at::Tensor> grad_inputs;
  for (size_t l = 0; l < scales.size(); ++l)
    grad_inputs.push_back(
        at::empty({batch_size, channels, heights[l], widths[l]}, options).zero_());
  const int64_t total = grad.numel();
  if (total > 0 && batch_size > 0) {
    const at::Tensor lv = levels.contiguous();
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(
        at::kHalf, at::kBFloat16, grad.scalar_type(), "multilevel_roi_align_backward_cuda", [&] {
          using acc_t = at::opmath_type<scalar_t>;
          const at::Tensor r = rois.to(c10::CppTypeToScalarType<acc_t>::value).contiguous();
          MapTable<acc_t*, acc_t> table{};
          table.count = static_cast<int64_t>(grad_inputs.size());
          for (size_t l = 0; l < grad_inputs.size(); ++l) {
            table.data[l] = grad_inputs[l].mutable_data_ptr<acc_t>();
            table.height[l] = heights[l];
            table.width[l] = widths[l];
            table.scale[l] = static_cast<acc_t>(scales[l]);
          }
          multilevel_roi_align_backward_kernel<scalar_t, acc_t>
              <<<blocks_for(total), kThreads, 0, stream>>>(
                  total, grad.const_data_ptr<scalar_t>(), grad.stride(0), grad.stride(1),
                  grad.stride(2), grad.stride(3), table, r.const_data_ptr<acc_t>(),
                  lv.const_data_ptr<int64_t>(), channels, pooled_height, pooled_width,
                  sampling_ratio, aligned, channels_last);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
  }
  for (at::Tensor& g : grad_inputs)
    g = g.to(grad.scalar_type());
  return grad_inputs;
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("roi_align", TORCH_FN(mrcnn::ops::cuda::roi_align_forward_cuda));
  m.impl("_roi_align_backward", TORCH_FN(mrcnn::ops::cuda::roi_align_backward_cuda));
  m.impl("multilevel_roi_align", TORCH_FN(mrcnn::ops::cuda::multilevel_roi_align_forward_cuda));
  m.impl("_multilevel_roi_align_backward",
         TORCH_FN(mrcnn::ops::cuda::multilevel_roi_align_backward_cuda));
}
