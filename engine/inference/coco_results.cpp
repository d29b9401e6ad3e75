#include "engine/inference/coco_results.h"

#include <ATen/ATen.h>

namespace mrcnn::engine {
namespace {

// pycocotools' encoding of one binary mask of an image of h x w (column-major runs), from the
// part of it that holds its foreground: `crop` (uint8, row-major) covers the image's pixels
// from (x, y) = origin on; the columns and rows outside the foreground are runs of zeros
// counted, not read pixel by pixel. A detection's mask is a small object in a large image (a
// tiled image of 2000 x 2000 holds hundreds), where encoding every pixel of every mask cost
// more than the model. The runs are the same as encodeColumnMajor's on the whole mask.
dataset::Rle encodeExtent(const at::Tensor& crop, std::array<int64_t, 2> origin, int64_t h,
                          int64_t w) {
  dataset::Rle rle{static_cast<uint32_t>(h), static_cast<uint32_t>(w), {}};
  const at::Tensor rows = at::nonzero(crop.any(1));
  if (rows.size(0) == 0) {
    rle.counts.push_back(static_cast<uint32_t>(h * w));
    return rle;
  }
  const int64_t cy0 = rows[0][0].item<int64_t>(), cy1 = rows[-1][0].item<int64_t>() + 1;
  const at::Tensor cols = at::nonzero(crop.slice(0, cy0, cy1).any(0));
  const int64_t cx0 = cols[0][0].item<int64_t>(), cx1 = cols[-1][0].item<int64_t>() + 1;
  // The extent, column-major, and where it lies in the image.
  const at::Tensor part = crop.slice(0, cy0, cy1).slice(1, cx0, cx1).t().contiguous();
  const int64_t x0 = origin[0] + cx0, x1 = origin[0] + cx1;
  const int64_t y0 = origin[1] + cy0, y1 = origin[1] + cy1;
  TORCH_CHECK(x0 >= 0 && y0 >= 0 && x1 <= w && y1 <= h,
              "cocoInstances: a mask's foreground lies outside its image");
  const uint8_t* p = part.data_ptr<uint8_t>();
  uint8_t value = 0;
  int64_t run = 0;
  const auto add = [&](uint8_t v, int64_t length) {
    if (length == 0) return;
    if (v != value) {
      rle.counts.push_back(static_cast<uint32_t>(run));
      value = v;
      run = 0;
    }
    run += length;
  };
  add(0, x0 * h);
  for (int64_t x = x0; x < x1; ++x) {
    add(0, y0);
    for (int64_t y = y0; y < y1; ++y)
      add(*p++ ? 1 : 0, 1);
    add(0, h - y1);
  }
  add(0, (w - x1) * h);
  rle.counts.push_back(static_cast<uint32_t>(run));
  return rle;
}

}  // namespace

std::vector<CocoInstance> cocoInstances(const model::ImageDetections& detections,
                                        const std::vector<int64_t>& category_ids) {
  const at::Tensor boxes = detections.boxes.to(at::kFloat).contiguous();
  const at::Tensor scores = detections.scores.to(at::kFloat).contiguous();
  const at::Tensor labels = detections.labels.to(at::kLong).contiguous();
  const auto b = boxes.accessor<float, 2>();
  const auto s = scores.accessor<float, 1>();
  const auto l = labels.accessor<int64_t, 1>();
  const at::Tensor origins = detections.mask_origins.defined()
                                 ? detections.mask_origins.to(at::kLong).contiguous()
                                 : at::Tensor();
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
      if (origins.defined()) {
        const int64_t* origin = origins.data_ptr<int64_t>() + 2 * k;
        in.mask = encodeExtent(detections.masks[k], {origin[0], origin[1]},
                               detections.image_size[0], detections.image_size[1]);
      } else {
        in.mask = encodeExtent(detections.masks[k], {0, 0}, detections.masks.size(1),
                               detections.masks.size(2));
      }
    }
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace mrcnn::engine
