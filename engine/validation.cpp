#include "engine/validation.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "engine/coco_results.h"
#include "engine/data_setup.h"
#include "engine/model/postprocess.h"

namespace mrcnn::engine {

Validator::Validator(std::shared_ptr<const dataset::CocoDataset> ground_truth,
                     std::shared_ptr<const dataset::SampleSource> source,
                     dataset::LoaderOptions options, bool with_masks, bool labels_are_ids)
    : ground_truth_(std::move(ground_truth)),
      source_(std::move(source)),
      options_(options),
      with_masks_(with_masks) {
  options_.training = false;
  options_.repeat = false;
  options_.load_masks = false;  // the evaluator rasterises the ground truth itself
  category_ids_.push_back(0);
  if (labels_are_ids) {
    int64_t largest = 0;
    for (const auto& c : ground_truth_->categories()) largest = std::max(largest, c.id);
    for (int64_t id = 1; id <= largest; ++id) category_ids_.push_back(id);
  } else {
    for (int64_t id : source_->categoryIds()) category_ids_.push_back(id);
  }
  std::vector<int64_t> images;
  const size_t n = options_.eval_samples == 0
                       ? source_->size()
                       : std::min<size_t>(options_.eval_samples, source_->size());
  for (size_t i = 0; i < n; ++i) images.push_back(source_->imageId(i));
  evaluator_ = std::make_unique<eval::CocoEvaluator>(*ground_truth_, with_masks_, images);
}

ValidationResult Validator::run(model::MaskRCNNImpl& model, const c10::Device& device) const {
  const auto started = std::chrono::steady_clock::now();
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  ValidationResult result;
  std::vector<eval::Detection> detections;
  dataset::Loader loader(source_, options_);
  while (auto batch = loader.next()) {
    for (auto& w : batch->warnings) result.warnings.push_back(w);
    const std::vector<model::Detections> dets =
        model.detect(batchImages(*batch).to(device), batchSizes(*batch));
    for (size_t i = 0; i < dets.size(); ++i) {
      const dataset::ImageMeta& meta = batch->meta[i];
      model::Detections cpu{dets[i].boxes.cpu(), dets[i].scores.cpu(), dets[i].labels.cpu(),
                            dets[i].masks.defined() ? dets[i].masks.cpu() : at::Tensor()};
      const model::ImageDetections original = model::toOriginalImage(
          cpu, {meta.height, meta.width}, {meta.original_height, meta.original_width});
      for (CocoInstance& in : cocoInstances(original, category_ids_)) {
        eval::Detection d;
        d.image_id = meta.image_id;
        d.category_id = in.category_id;
        d.bbox = {in.bbox[0], in.bbox[1], in.bbox[2], in.bbox[3]};
        d.area = in.bbox[2] * in.bbox[3];
        d.score = in.score;
        if (in.mask) d.mask = std::move(*in.mask);
        detections.push_back(std::move(d));
      }
      ++result.images;
    }
  }
  if (was_training) model.train();
  result.report = evaluator_->evaluate(std::move(detections));
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace mrcnn::engine
