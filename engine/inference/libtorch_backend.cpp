#include "engine/inference/libtorch_backend.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "engine/runtime/autocast_scope.h"
#include "engine/runtime/dense_graphs.h"

namespace mrcnn::engine {
namespace {

class LibTorchBackend final : public InferenceBackend {
 public:
  LibTorchBackend(model::MaskRCNN model, InputOptions input, c10::Device device,
                  Precision precision, int streams, bool prepare, bool cuda_graphs = false)
      : model_(std::move(model)),
        input_(input),
        device_(device),
        precision_(std::move(precision)),
        streams_(std::max(1, streams)) {
    if (streams_ > 1 && !device_.is_cpu()) {
      throw std::invalid_argument("throughput mode (--streams) runs LibTorch on the CPU, not " +
                                  device_.str());
    }
    if (!prepare) return;
    model_->to(device_);
    model_->prepareForInference();
    if (!cuda_graphs) return;
    runtime::DenseGraphsRequest request;
    request.wanted = true;
    request.device = device_;
    request.inference = true;
    graphs_ = runtime::useDenseGraphs(*model_, std::move(request), {});
  }

  std::string description() const override {
    std::string d = "LibTorch " + precision_.name + " on " + device_.str() + ", " +
                    model::describeLayout(model_->options().layout);
    if (streams_ > 1) d += ", throughput mode: " + std::to_string(streams_) + " streams";
    if (!graphs_.status.empty()) d += "; " + graphs_.status;
    return d;
  }
  std::string precision() const override { return precision_.name; }

  BackendRun run(const std::vector<std::filesystem::path>& paths) override {
    if (streams_ > 1) return runStreams(paths);
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
  // Throughput mode: each of streams_ threads takes the next file and runs it alone with its
  // share of the cores (LibTorch's OpenMP thread count is the calling thread's own), the
  // original count given back after. The first failure ends the run and is thrown.
  BackendRun runStreams(const std::vector<std::filesystem::path>& paths) {
    std::vector<std::optional<BackendImage>> images(paths.size());
    std::vector<std::optional<SkippedImage>> skipped(paths.size());
    std::atomic<size_t> next{0};
    std::mutex failure_mutex;
    std::exception_ptr failure;
    const int cores = at::get_num_threads();
    const int each = std::max(1, cores / streams_);
    const auto work = [&] {
      try {
        at::set_num_threads(each);
        for (size_t i = next++; i < paths.size(); i = next++) {
          std::vector<SizedBatch> groups = readImagesBySize({paths[i]}, input_);
          if (!groups.front().batch.skipped.empty()) skipped[i] = groups.front().batch.skipped[0];
          runGroups(groups, [&](size_t, const InputImage& in, cv::Mat& original,
                                model::ImageDetections d) {
            images[i] = BackendImage{in, std::move(original), std::move(d)};
          });
        }
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = paths.size();
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < streams_; ++t)
      threads.emplace_back(work);
    for (std::thread& t : threads)
      t.join();
    at::set_num_threads(cores);
    if (failure) std::rethrow_exception(failure);
    BackendRun out;
    for (size_t i = 0; i < paths.size(); ++i) {
      if (images[i]) out.images.push_back(std::move(*images[i]));
      if (skipped[i]) out.skipped.push_back(std::move(*skipped[i]));
    }
    return out;
  }

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
  int streams_;
  runtime::DenseGraphs graphs_;  // use_cuda_graphs
};

}  // namespace

std::unique_ptr<InferenceBackend> makeLibTorchBackend(model::MaskRCNN model, InputOptions input,
                                                      c10::Device device, Precision precision,
                                                      int streams, bool cuda_graphs) {
  return std::make_unique<LibTorchBackend>(std::move(model), input, device, std::move(precision),
                                           streams, /*prepare=*/true, cuda_graphs);
}

std::unique_ptr<InferenceBackend> makeLibTorchBackendOverTraining(model::MaskRCNN model,
                                                                  InputOptions input,
                                                                  c10::Device device,
                                                                  Precision precision) {
  return std::make_unique<LibTorchBackend>(std::move(model), input, device, std::move(precision),
                                           1, /*prepare=*/false);
}

}  // namespace mrcnn::engine
