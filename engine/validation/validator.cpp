#include "engine/validation/validator.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "engine/dist/process_group.h"
#include "engine/inference/coco_results.h"
#include "engine/model/postprocess.h"
#include "engine/setup/data_setup.h"
#include "engine/train/autocast_scope.h"

namespace mrcnn::engine {
namespace {

// One image's detections, with its index in the source (file order), as bytes for the
// gather: fixed-size fields, then the mask's runs.
template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T take(const std::string& in, size_t& at) {
  T v{};
  if (at + sizeof v > in.size())
    throw std::runtime_error("sharded evaluation: truncated detections");
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

struct ImageDetections {
  uint32_t source_index = 0;
  std::vector<eval::Detection> detections;
};

std::string pack(const std::vector<ImageDetections>& images, uint64_t image_count) {
  std::string out;
  put(out, image_count);
  put(out, static_cast<uint64_t>(images.size()));
  for (const ImageDetections& im : images) {
    put(out, im.source_index);
    put(out, static_cast<uint64_t>(im.detections.size()));
    for (const eval::Detection& d : im.detections) {
      put(out, d.image_id);
      put(out, d.category_id);
      put(out, d.bbox);
      put(out, d.area);
      put(out, d.score);
      put(out, d.mask.h);
      put(out, d.mask.w);
      put(out, static_cast<uint64_t>(d.mask.counts.size()));
      out.append(reinterpret_cast<const char*>(d.mask.counts.data()),
                 d.mask.counts.size() * sizeof(uint32_t));
    }
  }
  return out;
}

uint64_t unpack(const std::string& in, std::vector<ImageDetections>& images) {
  size_t at = 0;
  const auto image_count = take<uint64_t>(in, at);
  const auto n = take<uint64_t>(in, at);
  for (uint64_t i = 0; i < n; ++i) {
    ImageDetections im;
    im.source_index = take<uint32_t>(in, at);
    const auto k = take<uint64_t>(in, at);
    for (uint64_t j = 0; j < k; ++j) {
      eval::Detection d;
      d.image_id = take<int64_t>(in, at);
      d.category_id = take<int64_t>(in, at);
      d.bbox = take<dataset::Box>(in, at);
      d.area = take<double>(in, at);
      d.score = take<double>(in, at);
      d.mask.h = take<uint32_t>(in, at);
      d.mask.w = take<uint32_t>(in, at);
      const auto runs = take<uint64_t>(in, at);
      if (at + runs * sizeof(uint32_t) > in.size())
        throw std::runtime_error("sharded evaluation: truncated detections");
      d.mask.counts.resize(runs);
      std::memcpy(d.mask.counts.data(), in.data() + at, runs * sizeof(uint32_t));
      at += runs * sizeof(uint32_t);
      im.detections.push_back(std::move(d));
    }
    images.push_back(std::move(im));
  }
  return image_count;
}

}  // namespace

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
    for (const auto& c : ground_truth_->categories())
      largest = std::max(largest, c.id);
    for (int64_t id = 1; id <= largest; ++id)
      category_ids_.push_back(id);
  } else {
    for (int64_t id : source_->categoryIds())
      category_ids_.push_back(id);
  }
  std::vector<int64_t> images;
  const size_t n = options_.eval_samples == 0
                       ? source_->size()
                       : std::min<size_t>(options_.eval_samples, source_->size());
  for (size_t i = 0; i < n; ++i)
    images.push_back(source_->imageId(i));
  evaluator_ = std::make_unique<eval::CocoEvaluator>(*ground_truth_, with_masks_, images);
}

namespace {

// The detections of a loader batch, each image's as it gets them alone: the images of one
// padded size run together, cropped to that size. (Padding an image beyond its own size in
// a batch of larger ones changes the anchors the RPN ranks, hence its detections; see
// engine/inference/image_input.h.) In fixed mode every image fills the canvas: one group.
std::vector<model::Detections> detectBySize(model::MaskRCNNImpl& model, const dataset::Batch& batch,
                                            const c10::Device& device,
                                            const dataset::LoaderOptions& options) {
  const at::Tensor images = batchImages(batch);
  const model::ImageSizes sizes = batchSizes(batch);
  const auto own = [&](size_t i) -> std::array<int64_t, 2> {
    if (options.resize_mode == dataset::ResizeMode::kFixed) return sizes.padded;
    const int64_t m = std::max<uint32_t>(1, options.size_divisibility);
    return {(sizes.images[i][0] + m - 1) / m * m, (sizes.images[i][1] + m - 1) / m * m};
  };
  std::map<std::array<int64_t, 2>, std::vector<int64_t>> groups;
  for (size_t i = 0; i < sizes.images.size(); ++i)
    groups[own(i)].push_back(static_cast<int64_t>(i));
  if (groups.size() == 1 && groups.begin()->first == sizes.padded)
    return model.detect(images.to(device), sizes);
  std::vector<model::Detections> out(sizes.images.size());
  for (const auto& [padded, members] : groups) {
    model::ImageSizes group_sizes;
    group_sizes.padded = padded;
    for (int64_t i : members)
      group_sizes.images.push_back(sizes.images[static_cast<size_t>(i)]);
    const at::Tensor group_images = images.index_select(0, at::tensor(members, at::kLong))
                                        .slice(2, 0, padded[0])
                                        .slice(3, 0, padded[1]);
    std::vector<model::Detections> dets = model.detect(group_images.to(device), group_sizes);
    for (size_t k = 0; k < members.size(); ++k)
      out[static_cast<size_t>(members[k])] = std::move(dets[k]);
  }
  return out;
}

}  // namespace

ValidationResult Validator::run(model::MaskRCNNImpl& model, const c10::Device& device,
                                dist::ProcessGroup* group) const {
  const auto started = std::chrono::steady_clock::now();
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  ValidationResult result;
  std::vector<ImageDetections> per_image;
  dataset::LoaderOptions options = options_;
  if (group != nullptr) {
    options.shard_count = static_cast<uint32_t>(group->size());
    options.shard_index = static_cast<uint32_t>(group->rank());
  }
  dataset::Loader loader(source_, options);
  while (auto batch = loader.next()) {
    for (auto& w : batch->warnings)
      result.warnings.push_back(w);
    std::vector<model::Detections> dets;
    {
      train::AutocastScope autocast(precision_.autocast, device.type(), precision_.dtype);
      dets = detectBySize(model, *batch, device, options);
    }
    for (size_t i = 0; i < dets.size(); ++i) {
      const dataset::ImageMeta& meta = batch->meta[i];
      model::Detections cpu{dets[i].boxes.cpu(), dets[i].scores.cpu(), dets[i].labels.cpu(),
                            dets[i].masks.defined() ? dets[i].masks.cpu() : at::Tensor()};
      const model::ImageDetections original = model::toOriginalImage(
          cpu, {meta.height, meta.width}, {meta.original_height, meta.original_width});
      ImageDetections& im = per_image.emplace_back();
      im.source_index = meta.source_index;
      for (CocoInstance& in : cocoInstances(original, category_ids_)) {
        eval::Detection d;
        d.image_id = meta.image_id;
        d.category_id = in.category_id;
        d.bbox = {in.bbox[0], in.bbox[1], in.bbox[2], in.bbox[3]};
        d.area = in.bbox[2] * in.bbox[3];
        d.score = in.score;
        if (in.mask) d.mask = std::move(*in.mask);
        im.detections.push_back(std::move(d));
      }
      ++result.images;
    }
  }
  if (was_training) model.train();
  if (group != nullptr && group->size() > 1) {
    const std::vector<std::string> all =
        group->allGatherBytes(pack(per_image, result.images), "gather of evaluation detections");
    if (group->rank() != 0) {
      result.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      return result;
    }
    per_image.clear();
    result.images = 0;
    for (const std::string& bytes : all)
      result.images += unpack(bytes, per_image);
    // File order, as one process meets the images: pycocotools breaks score ties by it.
    std::stable_sort(per_image.begin(), per_image.end(),
                     [](const ImageDetections& a, const ImageDetections& b) {
                       return a.source_index < b.source_index;
                     });
  }
  std::vector<eval::Detection> detections;
  for (ImageDetections& im : per_image)
    for (eval::Detection& d : im.detections)
      detections.push_back(std::move(d));
  result.report = evaluator_->evaluate(std::move(detections));
  result.report.annotations_file = annotations_file_;
  result.report.image_dir = image_dir_;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace mrcnn::engine
