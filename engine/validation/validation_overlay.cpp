#include "engine/validation/validation_overlay.h"

#include <ATen/ATen.h>

#include <array>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "dataset/loader/transform.h"
#include "engine/inference/overlay.h"
#include "engine/model/postprocess.h"

namespace mrcnn::engine {
namespace {

// Image i of a batch as the model saw it: its resized region, the normalisation undone, BGR.
cv::Mat batchImageBgr(const dataset::Batch& batch, size_t i) {
  const dataset::ImageMeta& meta = batch.meta[i];
  const size_t plane = static_cast<size_t>(batch.height) * static_cast<size_t>(batch.width);
  const float* pixels = batch.image(i);
  cv::Mat out(meta.height, meta.width, CV_8UC3);
  for (int y = 0; y < meta.height; ++y) {
    auto* row = out.ptr<cv::Vec3b>(y);
    for (int x = 0; x < meta.width; ++x) {
      const size_t at =
          static_cast<size_t>(y) * static_cast<size_t>(batch.width) + static_cast<size_t>(x);
      for (size_t c = 0; c < 3; ++c) {
        const float v =
            (pixels[c * plane + at] * dataset::kImageNetStd[c] + dataset::kImageNetMean[c]) *
            255.0f;
        row[x][2 - static_cast<int>(c)] = cv::saturate_cast<uint8_t>(std::lround(v));
      }
    }
  }
  return out;
}

constexpr double kOverlayScore = 0.5;  // as the inference task's default

}  // namespace

ValidationOverlay drawValidationOverlay(const dataset::Batch& batch, size_t i,
                                        const model::Detections& dets,
                                        const std::vector<int64_t>& category_ids,
                                        const std::map<int64_t, std::string>& names) {
  const dataset::ImageMeta& meta = batch.meta[i];
  const std::array<int64_t, 2> size{meta.height, meta.width};
  const model::Detections cpu{dets.boxes.cpu(), dets.scores.cpu(), dets.labels.cpu(),
                              dets.masks.defined() ? dets.masks.cpu() : at::Tensor()};
  const model::ImageDetections drawn = model::toOriginalImage(cpu, size, size);
  const at::Tensor boxes = drawn.boxes.to(at::kFloat).contiguous();
  const at::Tensor scores = drawn.scores.to(at::kFloat).contiguous();
  const at::Tensor masks = drawn.masks.defined() ? drawn.masks.contiguous() : at::Tensor();
  std::vector<OverlayInstance> instances;
  for (int64_t k = 0; k < boxes.size(0); ++k) {
    const float score = scores[k].item<float>();
    if (score < kOverlayScore) continue;
    const int64_t label = drawn.labels[k].item<int64_t>();
    const int64_t id = label >= 0 && static_cast<size_t>(label) < category_ids.size()
                           ? category_ids[static_cast<size_t>(label)]
                           : label;
    const auto name = names.find(id);
    OverlayInstance in;
    in.x1 = boxes[k][0].item<float>();
    in.y1 = boxes[k][1].item<float>();
    in.x2 = boxes[k][2].item<float>();
    in.y2 = boxes[k][3].item<float>();
    in.score = score;
    in.category_id = id;
    in.name = name != names.end() ? name->second : std::to_string(id);
    if (masks.defined()) in.mask = masks[k].data_ptr<uint8_t>();
    instances.push_back(std::move(in));
  }
  cv::Mat image = batchImageBgr(batch, i);
  drawOverlay(image, instances);
  std::vector<uint8_t> png;
  cv::imencode(".png", image, png);
  return {meta.image_id, std::string(png.begin(), png.end())};
}

}  // namespace mrcnn::engine
