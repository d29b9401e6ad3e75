// CUDA kernels of mrcnn::nms and mrcnn::nms_keep_mask. The GPU computes, for every box in
// score order, a bitmask of the later boxes it suppresses (64 boxes a word); the greedy pass
// over those masks, which is sequential, runs on the host for nms (which returns indices)
// and on the device for nms_keep_mask (which returns a mask: nothing waits). Half and
// bfloat16 boxes are compared in float.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <vector>

#include "engine/ops/checks.h"
#include "engine/ops/iou.h"

namespace mrcnn::ops::cuda {
namespace {

constexpr int kBoxesPerWord = 64;

// The suppression masks of image blockIdx.z of a batch (nms: one image, one category). Block
// (row_block, col_block) compares the 64 boxes of row_block with the 64 boxes of col_block;
// only col_block >= row_block is needed, as a box only suppresses later boxes, and only
// boxes of its own category. Boxes are in each image's score order.
template <typename T>
__global__ void keep_mask_bits_kernel(int64_t n, double iou_threshold, const T* __restrict__ boxes,
                                      const int64_t* __restrict__ categories, int64_t col_blocks,
                                      unsigned long long* __restrict__ mask) {
  const int64_t row_block = blockIdx.y;
  const int64_t col_block = blockIdx.x;
  if (row_block > col_block) return;
  const int64_t image = blockIdx.z;
  boxes += image * n * 4;
  categories += image * n;
  mask += image * n * col_blocks;
  const int64_t row_start = row_block * kBoxesPerWord;
  const int64_t col_start = col_block * kBoxesPerWord;
  const int row_size =
      static_cast<int>(n - row_start < kBoxesPerWord ? n - row_start : kBoxesPerWord);
  const int col_size =
      static_cast<int>(n - col_start < kBoxesPerWord ? n - col_start : kBoxesPerWord);

  __shared__ T col_boxes[kBoxesPerWord * 4];
  __shared__ T col_areas[kBoxesPerWord];
  __shared__ int64_t col_categories[kBoxesPerWord];
  if (static_cast<int>(threadIdx.x) < col_size) {
    for (int k = 0; k < 4; ++k) {
      col_boxes[threadIdx.x * 4 + k] = boxes[(col_start + threadIdx.x) * 4 + k];
    }
    col_areas[threadIdx.x] = detail::box_area(&col_boxes[threadIdx.x * 4]);
    col_categories[threadIdx.x] = categories[col_start + threadIdx.x];
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) >= row_size) return;

  const int64_t i = row_start + threadIdx.x;
  const T* a = boxes + i * 4;
  const T area_a = detail::box_area(a);
  const int64_t category = categories[i];
  unsigned long long bits = 0;
  const int first = row_block == col_block ? static_cast<int>(threadIdx.x) + 1 : 0;
  for (int k = first; k < col_size; ++k) {
    if (col_categories[k] == category &&
        detail::box_iou_one(a, area_a, &col_boxes[k * 4], col_areas[k]) > iou_threshold) {
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
  // nms_keep_mask's kernel for a batch of one image, all boxes in one category.
  const at::Tensor one_category = at::zeros({n}, boxes.options().dtype(at::kLong));
  const dim3 blocks(static_cast<unsigned>(col_blocks), static_cast<unsigned>(col_blocks), 1);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(sorted.scalar_type(), "nms_cuda", [&] {
    keep_mask_bits_kernel<scalar_t><<<blocks, kBoxesPerWord, 0, stream>>>(
        n, iou_threshold, sorted.const_data_ptr<scalar_t>(), one_category.const_data_ptr<int64_t>(),
        col_blocks, reinterpret_cast<unsigned long long*>(mask.mutable_data_ptr<int64_t>()));
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

// The greedy pass on the device, one block an image: the dropped boxes as a bitset in shared
// memory (invalid ones dropped from the start); box i, when not dropped, is kept and its
// mask row dropped, the row's words split across the threads. Every thread reads the same
// bit of box i (its own row never sets it), so all take the same branch.
__global__ void keep_mask_greedy_kernel(int64_t n, int64_t col_blocks,
                                        const unsigned long long* __restrict__ mask,
                                        const bool* __restrict__ valid, bool* __restrict__ keep) {
  extern __shared__ unsigned long long dropped[];
  const int64_t image = blockIdx.x;
  mask += image * n * col_blocks;
  valid += image * n;
  keep += image * n;
  for (int64_t w = threadIdx.x; w < col_blocks; w += blockDim.x) {
    unsigned long long bits = 0;
    for (int k = 0; k < kBoxesPerWord; ++k) {
      const int64_t i = w * kBoxesPerWord + k;
      if (i < n && !valid[i]) bits |= 1ULL << k;
    }
    dropped[w] = bits;
  }
  for (int64_t i = 0; i < n; ++i) {
    __syncthreads();
    const int64_t word = i / kBoxesPerWord;
    const bool drop = (dropped[word] >> (i % kBoxesPerWord)) & 1ULL;
    if (threadIdx.x == 0) keep[i] = !drop;
    if (drop) continue;
    const unsigned long long* row = mask + i * col_blocks;
    for (int64_t w = word + threadIdx.x; w < col_blocks; w += blockDim.x)
      dropped[w] |= row[w];
  }
}

at::Tensor nms_keep_mask_cuda(const at::Tensor& boxes, const at::Tensor& scores,
                              const at::Tensor& categories, const at::Tensor& valid,
                              double iou_threshold) {
  detail::check_nms_keep_mask_args(boxes, scores, categories, valid);
  TORCH_CHECK(boxes.is_cuda(), "nms_keep_mask: the CUDA kernel got a ", boxes.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(boxes.device());
  if (boxes.scalar_type() == at::kHalf || boxes.scalar_type() == at::kBFloat16) {
    return nms_keep_mask_cuda(boxes.to(at::kFloat), scores.to(at::kFloat), categories, valid,
                              iou_threshold);
  }
  const int64_t images = boxes.size(0), n = boxes.size(1);
  if (images == 0 || n == 0) return at::zeros({images, n}, valid.options());
  const int64_t col_blocks = (n + kBoxesPerWord - 1) / kBoxesPerWord;
  TORCH_CHECK(col_blocks <= 65535 && images <= 65535, "nms_keep_mask: at most 65535 images of ",
              65535 * kBoxesPerWord, " boxes on CUDA, got ", images, " of ", n);
  const int64_t shared_bytes = col_blocks * static_cast<int64_t>(sizeof(unsigned long long));
  TORCH_CHECK(shared_bytes <= 48 * 1024, "nms_keep_mask: at most ", 48 * 1024 * 8,
              " boxes an image on CUDA (the greedy pass keeps its bitset in shared memory), got ",
              n);
  // Each image's boxes in score order (stable: equal scores by increasing index).
  const at::Tensor order =
      std::get<1>(scores.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true));
  const at::Tensor sorted = boxes.gather(1, order.unsqueeze(2).expand({images, n, 4})).contiguous();
  const at::Tensor sorted_categories = categories.gather(1, order).contiguous();
  const at::Tensor sorted_valid = valid.gather(1, order).contiguous();
  at::Tensor mask = at::empty({images * n * col_blocks}, boxes.options().dtype(at::kLong));
  at::Tensor keep_sorted = at::empty({images, n}, valid.options());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const dim3 blocks(static_cast<unsigned>(col_blocks), static_cast<unsigned>(col_blocks),
                    static_cast<unsigned>(images));
  AT_DISPATCH_FLOATING_TYPES(sorted.scalar_type(), "nms_keep_mask_cuda", [&] {
    keep_mask_bits_kernel<scalar_t><<<blocks, kBoxesPerWord, 0, stream>>>(
        n, iou_threshold, sorted.const_data_ptr<scalar_t>(),
        sorted_categories.const_data_ptr<int64_t>(), col_blocks,
        reinterpret_cast<unsigned long long*>(mask.mutable_data_ptr<int64_t>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  keep_mask_greedy_kernel<<<static_cast<unsigned>(images), 256, static_cast<size_t>(shared_bytes),
                            stream>>>(
      n, col_blocks, reinterpret_cast<const unsigned long long*>(mask.const_data_ptr<int64_t>()),
      sorted_valid.const_data_ptr<bool>(), keep_sorted.mutable_data_ptr<bool>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  // Back from score order to the boxes' own.
  return at::zeros({images, n}, valid.options()).scatter_(1, order, keep_sorted);
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("nms", TORCH_FN(mrcnn::ops::cuda::nms_cuda));
  m.impl("nms_keep_mask", TORCH_FN(mrcnn::ops::cuda::nms_keep_mask_cuda));
}
