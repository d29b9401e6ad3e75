// CUDA kernel of mrcnn::nms. The GPU computes, for every box in score order, a bitmask of
// the later boxes it suppresses (64 boxes a word); the greedy pass over those masks, which
// is sequential, runs on the host. Half and bfloat16 boxes are compared in float.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <vector>

#include "engine/ops/checks.h"
#include "engine/ops/iou.h"

namespace mrcnn::ops::cuda {
namespace {

constexpr int kBoxesPerWord = 64;

// Block (row_block, col_block) compares the 64 boxes of row_block with the 64 boxes of
// col_block; only col_block >= row_block is needed, as a box only suppresses later boxes.
template <typename T>
__global__ void nms_mask_kernel(int64_t n, double iou_threshold, const T* __restrict__ boxes,
                                int64_t col_blocks, unsigned long long* __restrict__ mask) {
  const int64_t row_block = blockIdx.y;
  const int64_t col_block = blockIdx.x;
  if (row_block > col_block) return;
  const int64_t row_start = row_block * kBoxesPerWord;
  const int64_t col_start = col_block * kBoxesPerWord;
  const int row_size =
      static_cast<int>(n - row_start < kBoxesPerWord ? n - row_start : kBoxesPerWord);
  const int col_size =
      static_cast<int>(n - col_start < kBoxesPerWord ? n - col_start : kBoxesPerWord);

  __shared__ T col_boxes[kBoxesPerWord * 4];
  __shared__ T col_areas[kBoxesPerWord];
  if (static_cast<int>(threadIdx.x) < col_size) {
    for (int k = 0; k < 4; ++k) {
      col_boxes[threadIdx.x * 4 + k] = boxes[(col_start + threadIdx.x) * 4 + k];
    }
    col_areas[threadIdx.x] = detail::box_area(&col_boxes[threadIdx.x * 4]);
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) >= row_size) return;

  const int64_t i = row_start + threadIdx.x;
  const T* a = boxes + i * 4;
  const T area_a = detail::box_area(a);
  unsigned long long bits = 0;
  const int first = row_block == col_block ? static_cast<int>(threadIdx.x) + 1 : 0;
  for (int k = first; k < col_size; ++k) {
    if (detail::box_iou_one(a, area_a, &col_boxes[k * 4], col_areas[k]) > iou_threshold) {
      bits |= 1ULL << k;
    }
  }
  mask[i * col_blocks + col_block] = bits;
}

at::Tensor nms_cuda(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  detail::check_nms_args(boxes, scores);
  TORCH_CHECK(boxes.is_cuda(), "nms: the CUDA kernel got a ", boxes.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(boxes.device());
  const int64_t n = boxes.size(0);
  if (n == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  if (boxes.scalar_type() == at::kHalf || boxes.scalar_type() == at::kBFloat16) {
    return nms_cuda(boxes.to(at::kFloat), scores.to(at::kFloat), iou_threshold);
  }

  // Stable: equal scores are visited by increasing index, as on the CPU.
  const at::Tensor order =
      std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor sorted = boxes.index_select(0, order).contiguous();
  const int64_t col_blocks = (n + kBoxesPerWord - 1) / kBoxesPerWord;
  TORCH_CHECK(col_blocks <= 65535, "nms: at most ", 65535 * kBoxesPerWord, " boxes on CUDA, got ",
              n);
  at::Tensor mask = at::empty({n * col_blocks}, boxes.options().dtype(at::kLong));
  const dim3 blocks(static_cast<unsigned>(col_blocks), static_cast<unsigned>(col_blocks));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(sorted.scalar_type(), "nms_cuda", [&] {
    nms_mask_kernel<scalar_t><<<blocks, kBoxesPerWord, 0, stream>>>(
        n, iou_threshold, sorted.const_data_ptr<scalar_t>(), col_blocks,
        reinterpret_cast<unsigned long long*>(mask.mutable_data_ptr<int64_t>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });

  const at::Tensor mask_host = mask.cpu();
  const auto* words =
      reinterpret_cast<const unsigned long long*>(mask_host.const_data_ptr<int64_t>());
  std::vector<unsigned long long> removed(static_cast<size_t>(col_blocks), 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t word = i / kBoxesPerWord;
    if (removed[word] & (1ULL << (i % kBoxesPerWord))) continue;
    keep.push_back(i);
    const unsigned long long* row = words + i * col_blocks;
    for (int64_t b = word; b < col_blocks; ++b)
      removed[b] |= row[b];
  }
  const at::Tensor kept_positions =
      at::from_blob(keep.data(), {static_cast<int64_t>(keep.size())}, at::kLong).to(boxes.device());
  return order.index_select(0, kept_positions);
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("nms", TORCH_FN(mrcnn::ops::cuda::nms_cuda));
}
