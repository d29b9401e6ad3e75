#include "engine/inference/coco_results.h"

#include <ATen/ATen.h>

namespace mrcnn::engine {

std::vector<CocoInstance> cocoInstances(const model::ImageDetections& detections,
                                        const std::vector<int64_t>& category_ids) {
  const at::Tensor boxes = detections.boxes.to(at::kFloat).contiguous();
  const at::Tensor scores = detections.scores.to(at::kFloat).contiguous();
  const at::Tensor labels = detections.labels.to(at::kLong).contiguous();
  const auto b = boxes.accessor<float, 2>();
  const auto s = scores.accessor<float, 1>();
  const auto l = labels.accessor<int64_t, 1>();
  std::vector<CocoInstance> out;
  out.reserve(static_cast<size_t>(boxes.size(0)));
  for (int64_t k = 0; k < boxes.size(0); ++k) {
    CocoInstance in;
    in.label = l[k];
    in.category_id = in.label >= 0 && static_cast<size_t>(in.label) < category_ids.size()
                         ? category_ids[static_cast<size_t>(in.label)]
                         : in.label;
    in.bbox = {b[k][0], b[k][1], b[k][2] - b[k][0], b[k][3] - b[k][1]};
    in.score = s[k];
    if (detections.masks.defined()) {
      TORCH_CHECK(detections.masks.scalar_type() == at::kByte,
                  "cocoInstances: masks must be binary (uint8)");
      // The mask API takes column-major masks (pycocotools' Fortran order).
      const at::Tensor column_major = detections.masks[k].t().contiguous();
      in.mask = dataset::encodeColumnMajor(
          {column_major.data_ptr<uint8_t>(), static_cast<size_t>(column_major.numel())},
          static_cast<uint32_t>(detections.masks.size(1)),
          static_cast<uint32_t>(detections.masks.size(2)));
    }
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace mrcnn::engine
