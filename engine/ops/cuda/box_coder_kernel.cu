// CUDA kernels of mrcnn::encode_boxes and mrcnn::decode_boxes: one thread per box. Half and
// bfloat16 are computed in float.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "engine/ops/box_coder_math.h"
#include "engine/ops/checks.h"
#include "engine/ops/cuda/launch.cuh"

namespace mrcnn::ops::cuda {
namespace {

template <typename T, typename A>
__global__ void encode_kernel(int64_t n, const T* __restrict__ reference,
                              const T* __restrict__ proposals, detail::CoderWeights<A> w,
                              T* __restrict__ targets) {
  MRCNN_GRID_STRIDE_LOOP(i, n) {
    A r[4], p[4], out[4];
    for (int k = 0; k < 4; ++k) {
      r[k] = static_cast<A>(reference[i * 4 + k]);
      p[k] = static_cast<A>(proposals[i * 4 + k]);
    }
    detail::encode_one(r, p, w, out);
    for (int k = 0; k < 4; ++k)
      targets[i * 4 + k] = static_cast<T>(out[k]);
  }
}

template <typename T, typename A>
__global__ void decode_kernel(int64_t total, int64_t k_per_box, const T* __restrict__ codes,
                              const T* __restrict__ boxes, detail::CoderWeights<A> w, A clip,
                              T* __restrict__ pred) {
  MRCNN_GRID_STRIDE_LOOP(e, total) {
    A c[4], b[4], out[4];
    for (int k = 0; k < 4; ++k) {
      c[k] = static_cast<A>(codes[e * 4 + k]);
      b[k] = static_cast<A>(boxes[(e / k_per_box) * 4 + k]);
    }
    detail::decode_one(c, b, w, clip, out);
    for (int k = 0; k < 4; ++k)
      pred[e * 4 + k] = static_cast<T>(out[k]);
  }
}

template <typename A>
detail::CoderWeights<A> coder_weights(double wx, double wy, double ww, double wh) {
  return {static_cast<A>(wx), static_cast<A>(wy), static_cast<A>(ww), static_cast<A>(wh)};
}

at::Tensor encode_boxes_cuda(const at::Tensor& reference_boxes, const at::Tensor& proposals,
                             double wx, double wy, double ww, double wh) {
  detail::check_encode_args(reference_boxes, proposals);
  TORCH_CHECK(proposals.is_cuda(), "encode_boxes: the CUDA kernel got a ", proposals.device(),
              " tensor");
  const c10::cuda::CUDAGuard device_guard(proposals.device());
  const int64_t n = proposals.size(0);
  at::Tensor targets = at::empty({n, 4}, proposals.options());
  if (n == 0) return targets;
  const at::Tensor r = reference_boxes.contiguous();
  const at::Tensor p = proposals.contiguous();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, p.scalar_type(), "encode_boxes_cuda", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        encode_kernel<scalar_t, acc_t><<<blocks_for(n), kThreads, 0, stream>>>(
            n, r.const_data_ptr<scalar_t>(), p.const_data_ptr<scalar_t>(),
            coder_weights<acc_t>(wx, wy, ww, wh), targets.mutable_data_ptr<scalar_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
  return targets;
}

at::Tensor decode_boxes_cuda(const at::Tensor& rel_codes, const at::Tensor& boxes, double wx,
                             double wy, double ww, double wh, double bbox_xform_clip) {
  detail::check_decode_args(rel_codes, boxes);
  TORCH_CHECK(rel_codes.is_cuda(), "decode_boxes: the CUDA kernel got a ", rel_codes.device(),
              " tensor");
  const c10::cuda::CUDAGuard device_guard(rel_codes.device());
  const int64_t n = rel_codes.size(0);
  const int64_t k = rel_codes.size(1) / 4;
  at::Tensor pred = at::empty({n, 4 * k}, rel_codes.options());
  if (n == 0) return pred;
  const at::Tensor codes = rel_codes.contiguous();
  const at::Tensor b = boxes.to(rel_codes.scalar_type()).contiguous();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf, at::kBFloat16, codes.scalar_type(), "decode_boxes_cuda", [&] {
        using acc_t = at::opmath_type<scalar_t>;
        decode_kernel<scalar_t, acc_t><<<blocks_for(n * k), kThreads, 0, stream>>>(
            n * k, k, codes.const_data_ptr<scalar_t>(), b.const_data_ptr<scalar_t>(),
            coder_weights<acc_t>(wx, wy, ww, wh), static_cast<acc_t>(bbox_xform_clip),
            pred.mutable_data_ptr<scalar_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
  return pred;
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("encode_boxes", TORCH_FN(mrcnn::ops::cuda::encode_boxes_cuda));
  m.impl("decode_boxes", TORCH_FN(mrcnn::ops::cuda::decode_boxes_cuda));
}
