// CPU kernel of mrcnn::nms: greedy suppression in score order, torchvision's algorithm. The
// boxes are gathered into score order first so that the inner loop reads memory forwards.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

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

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("nms", TORCH_FN(mrcnn::ops::cpu::nms_cpu));
}
