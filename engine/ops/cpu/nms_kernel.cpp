// CPU kernels of mrcnn::nms and mrcnn::nms_keep_mask: greedy suppression in score order,
// torchvision's algorithm. The boxes are gathered into score order first so that the inner
// loop reads memory forwards.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "engine/ops/checks.h"
#include "engine/ops/iou.h"

namespace mrcnn::ops::cpu {
namespace {

template <typename T>
int64_t nms_impl(const at::Tensor& boxes, const int64_t* order, int64_t n, double iou_threshold,
                 int64_t* keep) {
  // Boxes and areas in visiting order: row r of `sorted` is box order[r].
  std::vector<T> sorted(static_cast<size_t>(n) * 4);
  std::vector<T> areas(static_cast<size_t>(n));
  const auto b = boxes.accessor<T, 2>();
  for (int64_t r = 0; r < n; ++r) {
    for (int k = 0; k < 4; ++k)
      sorted[r * 4 + k] = b[order[r]][k];
    areas[r] = detail::box_area(&sorted[r * 4]);
  }
  std::vector<uint8_t> suppressed(static_cast<size_t>(n), 0);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (suppressed[i]) continue;
    keep[kept++] = order[i];
    const T* bi = &sorted[i * 4];
    for (int64_t j = i + 1; j < n; ++j) {
      if (suppressed[j]) continue;
      if (detail::box_iou_one(bi, areas[i], &sorted[j * 4], areas[j]) > iou_threshold) {
        suppressed[j] = 1;
      }
    }
  }
  return kept;
}

at::Tensor nms_cpu(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  detail::check_nms_args(boxes, scores);
  TORCH_CHECK(boxes.is_cpu(), "nms: the CPU kernel got a ", boxes.device(), " tensor");
  if (boxes.scalar_type() == at::kHalf || boxes.scalar_type() == at::kBFloat16) {
    return nms_cpu(boxes.to(at::kFloat), scores.to(at::kFloat), iou_threshold);
  }
  const int64_t n = boxes.size(0);
  if (n == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  // Stable: equal scores are visited by increasing index, as torchvision does.
  const at::Tensor order =
      std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true)).contiguous();
  at::Tensor keep = at::empty({n}, boxes.options().dtype(at::kLong));
  int64_t kept = 0;
  AT_DISPATCH_FLOATING_TYPES(boxes.scalar_type(), "nms_cpu", [&] {
    kept = nms_impl<scalar_t>(boxes, order.const_data_ptr<int64_t>(), n, iou_threshold,
                              keep.mutable_data_ptr<int64_t>());
  });
  return keep.narrow(0, 0, kept);
}

// One image of nms_keep_mask: the valid boxes in score order (`order`), grouped by category
// (each group still in score order), and the greedy pass within each group, each box
// dropping later ones. Leaving out the invalid boxes and grouping first visits sum(k_c^2)
// pairs of valid boxes, not K^2.
template <typename T>
void keep_mask_one(const T* boxes, const int64_t* order, const int64_t* categories,
                   const bool* valid, int64_t n, double iou_threshold, bool* keep) {
  std::vector<int64_t> visit;  // the valid boxes only: the others play no part
  for (int64_t r = 0; r < n; ++r)
    if (valid[order[r]]) visit.push_back(order[r]);
  std::stable_sort(visit.begin(), visit.end(),
                   [&](int64_t a, int64_t b) { return categories[a] < categories[b]; });
  const auto m = static_cast<int64_t>(visit.size());
  std::vector<T> sorted(static_cast<size_t>(m) * 4);
  std::vector<T> areas(static_cast<size_t>(m));
  std::vector<uint8_t> suppressed(static_cast<size_t>(m), 0);
  for (int64_t r = 0; r < m; ++r) {
    for (int c = 0; c < 4; ++c)
      sorted[r * 4 + c] = boxes[visit[r] * 4 + c];
    areas[r] = detail::box_area(&sorted[r * 4]);
  }
  for (int64_t begin = 0; begin < m;) {
    const int64_t category = categories[visit[begin]];
    int64_t end = begin;
    while (end < m && categories[visit[end]] == category)
      ++end;
    for (int64_t i = begin; i < end; ++i) {
      if (suppressed[i]) continue;
      keep[visit[i]] = true;
      const T* bi = &sorted[i * 4];
      for (int64_t j = i + 1; j < end; ++j) {
        if (suppressed[j]) continue;
        if (detail::box_iou_one(bi, areas[i], &sorted[j * 4], areas[j]) > iou_threshold) {
          suppressed[j] = 1;
        }
      }
    }
    begin = end;
  }
}

at::Tensor nms_keep_mask_cpu(const at::Tensor& boxes, const at::Tensor& scores,
                             const at::Tensor& categories, const at::Tensor& valid,
                             double iou_threshold) {
  detail::check_nms_keep_mask_args(boxes, scores, categories, valid);
  TORCH_CHECK(boxes.is_cpu(), "nms_keep_mask: the CPU kernel got a ", boxes.device(), " tensor");
  if (boxes.scalar_type() == at::kHalf || boxes.scalar_type() == at::kBFloat16) {
    return nms_keep_mask_cpu(boxes.to(at::kFloat), scores.to(at::kFloat), categories, valid,
                             iou_threshold);
  }
  const int64_t images = boxes.size(0), n = boxes.size(1);
  at::Tensor keep = at::zeros({images, n}, valid.options());
  if (keep.numel() == 0) return keep;
  // Stable: equal scores are visited by increasing index, as nms does.
  const at::Tensor order =
      std::get<1>(scores.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true)).contiguous();
  const at::Tensor b = boxes.contiguous(), c = categories.contiguous(), v = valid.contiguous();
  AT_DISPATCH_FLOATING_TYPES(boxes.scalar_type(), "nms_keep_mask_cpu", [&] {
    at::parallel_for(0, images, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        keep_mask_one<scalar_t>(
            b.const_data_ptr<scalar_t>() + i * n * 4, order.const_data_ptr<int64_t>() + i * n,
            c.const_data_ptr<int64_t>() + i * n, v.const_data_ptr<bool>() + i * n, n, iou_threshold,
            keep.mutable_data_ptr<bool>() + i * n);
      }
    });
  });
  return keep;
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("nms", TORCH_FN(mrcnn::ops::cpu::nms_cpu));
  m.impl("nms_keep_mask", TORCH_FN(mrcnn::ops::cpu::nms_keep_mask_cpu));
}
