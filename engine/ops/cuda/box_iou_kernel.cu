// CUDA kernel of mrcnn::box_iou: one thread per pair.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "engine/ops/checks.h"
#include "engine/ops/cuda/launch.cuh"
#include "engine/ops/iou.h"

namespace mrcnn::ops::cuda {
namespace {

template <typename T>
__global__ void box_iou_kernel(int64_t n, int64_t m, const T* __restrict__ a,
                               const T* __restrict__ b, T* __restrict__ iou) {
  MRCNN_GRID_STRIDE_LOOP(index, n * m) {
    const T* bi = a + (index / m) * 4;
    const T* bj = b + (index % m) * 4;
    iou[index] = detail::box_iou_one(bi, detail::box_area(bi), bj, detail::box_area(bj));
  }
}

at::Tensor box_iou_cuda(const at::Tensor& boxes1, const at::Tensor& boxes2) {
  detail::check_boxes("box_iou", "boxes1", boxes1);
  detail::check_boxes("box_iou", "boxes2", boxes2);
  detail::check_box_pair("box_iou", "boxes1", boxes1, "boxes2", boxes2);
  TORCH_CHECK(boxes1.is_cuda(), "box_iou: the CUDA kernel got a ", boxes1.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(boxes1.device());
  if (boxes1.scalar_type() == at::kHalf || boxes1.scalar_type() == at::kBFloat16) {
    return box_iou_cuda(boxes1.to(at::kFloat), boxes2.to(at::kFloat));
  }
  const int64_t n = boxes1.size(0);
  const int64_t m = boxes2.size(0);
  at::Tensor iou = at::empty({n, m}, boxes1.options());
  if (iou.numel() == 0) return iou;
  const at::Tensor a = boxes1.contiguous();
  const at::Tensor b = boxes2.contiguous();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "box_iou_cuda", [&] {
    box_iou_kernel<scalar_t><<<blocks_for(n * m), kThreads, 0, stream>>>(
        n, m, a.const_data_ptr<scalar_t>(), b.const_data_ptr<scalar_t>(),
        iou.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return iou;
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("box_iou", TORCH_FN(mrcnn::ops::cuda::box_iou_cuda));
}
