// mrcnn::batched_nms: composed of mrcnn::nms and ATen operators, so one implementation
// serves every device (registered as CompositeImplicitAutograd).
#include <ATen/TensorOperators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "engine/ops/checks.h"
#include "engine/ops/nms.h"

namespace mrcnn::ops {
namespace {

// Shifts each category's boxes by (category * (max coordinate + 1)) so that boxes of
// different categories cannot overlap, then runs one NMS.
at::Tensor nms_with_offsets(const at::Tensor& boxes, const at::Tensor& scores,
                            const at::Tensor& idxs, double iou_threshold) {
  const at::Tensor offsets = idxs.to(boxes.options()) * (boxes.max() + 1);
  return nms(boxes + offsets.unsqueeze(1), scores, iou_threshold);
}

// One NMS per category; the kept boxes of all categories, by decreasing score.
at::Tensor nms_per_category(const at::Tensor& boxes, const at::Tensor& scores,
                            const at::Tensor& idxs, double iou_threshold) {
  // A stable sort groups the categories and keeps each group's indices increasing, so each
  // per-category NMS sees its boxes in the original order.
  const auto [sorted_idxs, order] = idxs.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor counts =
      std::get<2>(
          at::unique_consecutive(sorted_idxs, /*return_inverse=*/false, /*return_counts=*/true))
          .cpu();
  at::Tensor keep_mask = at::zeros({boxes.size(0)}, boxes.options().dtype(at::kBool));
  const int64_t* count = counts.const_data_ptr<int64_t>();
  int64_t start = 0;
  for (int64_t g = 0; g < counts.size(0); ++g) {
    const at::Tensor members = order.narrow(0, start, count[g]);
    const at::Tensor kept =
        nms(boxes.index_select(0, members), scores.index_select(0, members), iou_threshold);
    keep_mask.index_fill_(0, members.index_select(0, kept), true);
    start += count[g];
  }
  const at::Tensor keep = keep_mask.nonzero().squeeze(1);
  return keep.index_select(0, std::get<1>(scores.index_select(0, keep).sort(0, true)));
}

at::Tensor batched_nms_composite(const at::Tensor& boxes, const at::Tensor& scores,
                                 const at::Tensor& idxs, double iou_threshold) {
  detail::check_nms_args(boxes, scores);
  TORCH_CHECK(idxs.dim() == 1 && idxs.size(0) == boxes.size(0),
              "batched_nms: idxs must be a 1-D tensor with one category per box ([", boxes.size(0),
              "]), got ", idxs.sizes());
  TORCH_CHECK(!at::isFloatingType(idxs.scalar_type()) && idxs.scalar_type() != at::kBool,
              "batched_nms: idxs must be an integer tensor, got ", idxs.scalar_type());
  TORCH_CHECK(idxs.device() == boxes.device(), "batched_nms: idxs (", idxs.device(),
              ") and boxes (", boxes.device(), ") must be on the same device");
  if (boxes.numel() == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  // torchvision's switch point, for its results: the offset trick changes coordinates, and
  // so, by rounding, can change an IoU that sits right at the threshold.
  const int64_t per_category_above = boxes.is_cpu() ? 4000 : 100000;
  if (boxes.numel() > per_category_above) {
    return nms_per_category(boxes, scores, idxs, iou_threshold);
  }
  return nms_with_offsets(boxes, scores, idxs, iou_threshold);
}

}  // namespace

at::Tensor batched_nms(const at::Tensor& boxes, const at::Tensor& scores, const at::Tensor& idxs,
                       double iou_threshold) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::batched_nms", "")
                             .typed<decltype(batched_nms)>();
  return op.call(boxes, scores, idxs, iou_threshold);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def("batched_nms(Tensor boxes, Tensor scores, Tensor idxs, float iou_threshold) -> Tensor");
}

TORCH_LIBRARY_IMPL(mrcnn, CompositeImplicitAutograd, m) {
  m.impl("batched_nms", TORCH_FN(mrcnn::ops::batched_nms_composite));
}
