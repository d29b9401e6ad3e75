#include "engine/validation/validator.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <stdexcept>
#include <string>

#include "dataset/loader/process_sample.h"
#include "engine/dist/process_group.h"
#include "engine/inference/coco_results.h"
#include "engine/inference/libtorch_backend.h"
#include "engine/inference/tiled_backend.h"
#include "engine/model/device_copy.h"
#include "engine/model/postprocess.h"
#include "engine/runtime/autocast_scope.h"
#include "engine/setup/data_setup.h"
#include "engine/validation/validation_overlay.h"

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

// One image's detections (in its own pixels) as the evaluation's, with its place in the
// source.
ImageDetections evalDetections(const model::ImageDetections& found, int64_t image_id,
                               uint32_t source_index, const std::vector<int64_t>& category_ids) {
  ImageDetections im;
  im.source_index = source_index;
  for (CocoInstance& in : cocoInstances(found, category_ids)) {
    eval::Detection d;
    d.image_id = image_id;
    d.category_id = in.category_id;
    d.bbox = {in.bbox[0], in.bbox[1], in.bbox[2], in.bbox[3]};
    d.area = in.bbox[2] * in.bbox[3];
    d.score = in.score;
    if (in.mask) d.mask = std::move(*in.mask);
    im.detections.push_back(std::move(d));
  }
  return im;
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
  for (const auto& c : ground_truth_->categories())
    category_names_[c.id] = c.name;
}

namespace {

// Runs `step(images, sizes, members)` on the images of a loader batch grouped by their own
// padded size and returns each image's detections, as it gets them alone: the images of one
// padded size run together, cropped to that size. (Padding an image beyond its own size in
// a batch of larger ones changes the anchors the RPN ranks, hence its detections; see
// engine/inference/image_input.h.) In fixed mode every image fills the canvas: one group.
template <typename Step>
std::vector<model::Detections> bySize(const dataset::Batch& batch,
                                      const dataset::LoaderOptions& options, Step&& step) {
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
    return step(images, sizes, groups.begin()->second);
  std::vector<model::Detections> out(sizes.images.size());
  for (const auto& [padded, members] : groups) {
    model::ImageSizes group_sizes;
    group_sizes.padded = padded;
    for (int64_t i : members)
      group_sizes.images.push_back(sizes.images[static_cast<size_t>(i)]);
    const at::Tensor group_images = images.index_select(0, at::tensor(members, at::kLong))
                                        .slice(2, 0, padded[0])
                                        .slice(3, 0, padded[1]);
    std::vector<model::Detections> dets = step(group_images, group_sizes, members);
    for (size_t k = 0; k < members.size(); ++k)
      out[static_cast<size_t>(members[k])] = std::move(dets[k]);
  }
  return out;
}

// The losses' running sums: each component times its denominator, and the denominators, so
// that groups, batches and ranks add up to the mean over all the images.
struct LossSums {
  enum : int64_t {
    kObjectness,
    kRpnBox,
    kClassifier,
    kBoxReg,
    kMask,
    kRpnSampled,
    kRoiSampled,
    kMaskPositives,
    kImages,
    kCount
  };
  std::array<double, kCount> v{};

  void add(const model::MaskRCNNLosses& l, size_t images) {
    const auto value = [](const at::Tensor& t) {
      return t.defined() ? t.to(at::kDouble).item<double>() : 0.0;
    };
    // A component whose denominator is 0 (no positive RoI for the mask) adds nothing.
    if (l.rpn_sampled > 0) {
      v[kObjectness] += value(l.rpn_objectness) * l.rpn_sampled;
      v[kRpnBox] += value(l.rpn_box) * l.rpn_sampled;
    }
    if (l.roi_sampled > 0) {
      v[kClassifier] += value(l.classifier) * l.roi_sampled;
      v[kBoxReg] += value(l.box_reg) * l.roi_sampled;
    }
    if (l.mask_positives > 0) v[kMask] += value(l.mask) * l.mask_positives;
    v[kRpnSampled] += l.rpn_sampled;
    v[kRoiSampled] += l.roi_sampled;
    v[kMaskPositives] += l.mask_positives;
    v[kImages] += static_cast<double>(images);
  }

  train::LossValues means(const model::MaskRCNNOptions& o) const {
    const auto mean = [&](int64_t sum, int64_t count) {
      return v[count] > 0 ? v[sum] / v[count] : 0.0;
    };
    train::LossValues l;
    l.rpn_objectness = mean(kObjectness, kRpnSampled);
    l.rpn_box = mean(kRpnBox, kRpnSampled);
    l.fast_rcnn_class = mean(kClassifier, kRoiSampled);
    l.fast_rcnn_box = mean(kBoxReg, kRoiSampled);
    l.mask = mean(kMask, kMaskPositives);
    l.total = l.rpn_objectness + l.rpn_box * o.rpn.box_loss_weight + l.fast_rcnn_class +
              l.fast_rcnn_box * o.roi_heads.box_loss_weight;
    if (o.roi_heads.with_masks) l.total += l.mask * o.roi_heads.mask_loss_weight;
    return l;
  }
};

// The ground truth of some images of a batch as training sees it: crowds skipped and the
// instance cap applied as the training loader does (the evaluation loader keeps them all),
// labels outside the model's classes dropped; each image's samples keyed by its place in the
// source.
model::MaskRCNNTargets lossTargets(const dataset::Batch& batch, const std::vector<int64_t>& members,
                                   const dataset::LoaderOptions& options, int64_t num_classes,
                                   bool with_masks) {
  model::MaskRCNNTargets t;
  for (int64_t m : members) {
    const auto i = static_cast<size_t>(m);
    const dataset::Targets& g = batch.targets[i];
    std::vector<int64_t> keep;
    for (size_t k = 0; k < g.size(); ++k) {
      if (options.skip_crowd_during_training && g.iscrowd[k]) continue;
      if (g.labels[k] < 1 || g.labels[k] >= num_classes) continue;
      if (options.max_num_instances > 0 && keep.size() >= options.max_num_instances) break;
      keep.push_back(static_cast<int64_t>(k));
    }
    const auto n = static_cast<int64_t>(g.size());
    const at::Tensor index = at::tensor(keep, at::kLong);
    t.boxes.push_back(at::from_blob(const_cast<float*>(g.boxes.data()), {n, 4}, at::kFloat)
                          .index_select(0, index));
    t.labels.push_back(at::from_blob(const_cast<int64_t*>(g.labels.data()), {n}, at::kLong)
                           .index_select(0, index));
    if (with_masks)
      t.mask_crops.push_back(
          model::selectMasks(croppedMasks(g, batch.meta[i].height, batch.meta[i].width), index));
    t.sample_keys.push_back(0x76616C5F6C6F7373ull ^ batch.meta[i].source_index);
  }
  return t;
}

}  // namespace

// What one run() collects: each image's detections and the losses' sums.
struct Validator::Collected {
  std::vector<ImageDetections> per_image;
  LossSums sums;
};

// The loader's batches (the images resized as the spec says), each padded size through the
// model at once, the losses beside the detections when asked for.
void Validator::detectBatches(model::MaskRCNNImpl& model, const c10::Device& device,
                              dist::ProcessGroup* group, ValidationResult& result,
                              Collected& collected) const {
  dataset::LoaderOptions options = options_;
  options.load_masks = compute_losses_ && with_masks_;
  if (group != nullptr) {
    options.shard_count = static_cast<uint32_t>(group->size());
    options.shard_index = static_cast<uint32_t>(group->rank());
  }
  const bool masks = with_masks_ && model.options().roi_heads.with_masks;
  dataset::Loader loader(source_, options);
  while (auto batch = loader.next()) {
    for (auto& w : batch->warnings)
      result.warnings.push_back(w);
    std::vector<model::Detections> dets;
    {
      train::AutocastScope autocast(precision_.autocast, device.type(), precision_.dtype);
      dets = bySize(*batch, options,
                    [&](const at::Tensor& images, const model::ImageSizes& sizes,
                        const std::vector<int64_t>& members) {
                      if (!compute_losses_)
                        return model.detect(model::copyToDevice(images, device), sizes);
                      model::MaskRCNNTargets targets =
                          lossTargets(*batch, members, options_, model.numClasses(), masks);
                      model::moveToDevice(targets, device);
                      model::MaskRCNNValidation v =
                          model.validate(model::copyToDevice(images, device), sizes, targets);
                      collected.sums.add(v.losses, members.size());
                      return std::move(v.detections);
                    });
    }
    for (size_t i = 0; i < dets.size(); ++i) {
      const dataset::ImageMeta& meta = batch->meta[i];
      if (result.overlays.size() < overlay_images_ && (group == nullptr || group->rank() == 0)) {
        result.overlays.push_back(
            drawValidationOverlay(*batch, i, dets[i], category_ids_, category_names_));
      }
      model::Detections cpu{dets[i].boxes.cpu(), dets[i].scores.cpu(), dets[i].labels.cpu(),
                            dets[i].masks.defined() ? dets[i].masks.cpu() : at::Tensor()};
      collected.per_image.push_back(
          evalDetections(model::toOriginalImage(cpu, {meta.height, meta.width},
                                                {meta.original_height, meta.original_width}),
                         meta.image_id, meta.source_index, category_ids_));
      ++result.images;
    }
  }
}

// Each image of this rank's share (every size()-th of the first eval_samples, as the
// evaluation loader shards them) decoded whole and run in tiles through the model as it is.
void Validator::detectTiles(model::MaskRCNNImpl& model, const c10::Device& device,
                            dist::ProcessGroup* group, ValidationResult& result,
                            Collected& collected) const {
  const auto shared = std::dynamic_pointer_cast<model::MaskRCNNImpl>(model.shared_from_this());
  const std::unique_ptr<InferenceBackend> tiled = makeTiledBackend(
      makeLibTorchBackendOverTraining(model::MaskRCNN(shared), tile_input_, device, precision_),
      tiles_);
  const size_t count = options_.eval_samples == 0
                           ? source_->size()
                           : std::min<size_t>(options_.eval_samples, source_->size());
  const size_t stride = group != nullptr ? static_cast<size_t>(group->size()) : 1;
  for (size_t i = group != nullptr ? static_cast<size_t>(group->rank()) : 0; i < count;
       i += stride) {
    dataset::SampleImage read = dataset::readSampleImage(*source_, i);
    if (read.problem) {
      result.warnings.push_back({.code = read.problem->first,
                                 .image_id = read.image_id,
                                 .annotation_id = std::nullopt,
                                 .message = std::move(read.problem->second)});
      continue;
    }
    collected.per_image.push_back(evalDetections(tiled->detect({read.image}).front(), read.image_id,
                                                 static_cast<uint32_t>(i), category_ids_));
    ++result.images;
  }
}

ValidationResult Validator::run(model::MaskRCNNImpl& model, const c10::Device& device,
                                dist::ProcessGroup* group) const {
  const auto started = std::chrono::steady_clock::now();
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  ValidationResult result;
  Collected collected;
  if (tiled()) {
    detectTiles(model, device, group, result, collected);
  } else {
    detectBatches(model, device, group, result, collected);
  }
  std::vector<ImageDetections>& per_image = collected.per_image;
  LossSums& sums = collected.sums;
  if (was_training) model.train();
  if (compute_losses_ && group != nullptr && group->size() > 1) {
    at::Tensor all = at::tensor(std::vector<double>(sums.v.begin(), sums.v.end()), at::kDouble)
                         .to(group->device());
    group->allReduceSum(all, "all-reduce of the validation losses");
    const at::Tensor cpu = all.cpu();
    for (size_t k = 0; k < sums.v.size(); ++k)
      sums.v[k] = cpu[static_cast<int64_t>(k)].item<double>();
  }
  if (compute_losses_ && sums.v[LossSums::kImages] > 0) result.losses = sums.means(model.options());
  if (group != nullptr && group->size() > 1) {
    const std::vector<std::string> all =
        group->allGatherBytes(pack(per_image, result.images), "gather of evaluation detections");
    if (group->rank() != 0) {
      result.losses.reset();
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
