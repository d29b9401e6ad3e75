#include "engine/inference/libtorch_backend.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <utility>

#include "engine/runtime/autocast_scope.h"

namespace mrcnn::engine {
namespace {

class LibTorchBackend final : public InferenceBackend {
 public:
  LibTorchBackend(model::MaskRCNN model, InputOptions input, c10::Device device,
                  Precision precision)
      : model_(std::move(model)), input_(input), device_(device), precision_(std::move(precision)) {
    model_->to(device_);
    model_->prepareForInference();
  }

  std::string description() const override {
    return "LibTorch " + precision_.name + " on " + device_.str();
  }
  std::string precision() const override { return precision_.name; }

  BackendRun run(const std::vector<std::filesystem::path>& paths) override {
    BackendRun out;
    std::vector<SizedBatch> groups = readImagesBySize(paths, input_);
    out.skipped = groups.front().batch.skipped;
    runGroups(groups, [&](size_t index, const InputImage& in, cv::Mat& original,
                          model::ImageDetections d) {
      if (out.images.size() <= index) out.images.resize(index + 1);
      out.images[index] = {in, std::move(original), std::move(d)};
    });
    return out;
  }

  std::vector<model::ImageDetections> detect(const std::vector<cv::Mat>& images) override {
    std::vector<model::ImageDetections> out(images.size());
    std::vector<SizedBatch> groups = batchDecodedBySize(images, input_);
    runGroups(groups, [&](size_t index, const InputImage&, cv::Mat&, model::ImageDetections d) {
      out[index] = std::move(d);
    });
    return out;
  }

 private:
  // Each group through the model; `take(index, input, original, detections)` per image, the
  // detections in the image's own pixels.
  template <typename Take>
  void runGroups(std::vector<SizedBatch>& groups, Take&& take) {
    torch::NoGradGuard no_grad;
    for (SizedBatch& group : groups) {
      if (group.batch.inputs.empty()) continue;
      std::vector<model::Detections> dets;
      {
        train::AutocastScope autocast(precision_.autocast, device_.type(), precision_.dtype);
        dets = model_->detect(group.batch.images.to(device_), group.batch.sizes);
      }
      for (size_t k = 0; k < dets.size(); ++k) {
        const InputImage& in = group.batch.inputs[k];
        const model::Detections& d = dets[k];
        const model::Detections cpu{d.boxes.cpu(), d.scores.cpu(), d.labels.cpu(),
                                    d.masks.defined() ? d.masks.cpu() : at::Tensor()};
        take(group.index[k], in, group.batch.originals[k],
             model::toOriginalImage(cpu, {in.height, in.width},
                                    {in.original_height, in.original_width}));
      }
    }
  }

 private:
  model::MaskRCNN model_;
  InputOptions input_;
  c10::Device device_;
  Precision precision_;
};

}  // namespace

std::unique_ptr<InferenceBackend> makeLibTorchBackend(model::MaskRCNN model, InputOptions input,
                                                      c10::Device device, Precision precision) {
  return std::make_unique<LibTorchBackend>(std::move(model), input, device, std::move(precision));
}

}  // namespace mrcnn::engine
