#include "engine/inference/openvino_backend.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <opencv2/core.hpp>
#include <openvino/openvino.hpp>
#include <stdexcept>
#include <system_error>

#include "engine/inference/openvino_input.h"
#include "engine/ops/paste_masks.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// An output of the request as a tensor of our own (the request reuses its memory).
at::Tensor copyOut(ov::InferRequest& request, const std::string& name, at::ScalarType type) {
  const ov::Tensor t = request.get_tensor(name);
  std::vector<int64_t> shape;
  for (size_t d : t.get_shape())
    shape.push_back(static_cast<int64_t>(d));
  return at::from_blob(const_cast<void*>(t.data()), shape, at::TensorOptions().dtype(type)).clone();
}

bool cpuHasBf16(ov::Core& core) {
  const std::vector<std::string> caps = core.get_property("CPU", ov::device::capabilities);
  return std::find(caps.begin(), caps.end(), ov::device::capability::BF16) != caps.end();
}

// A QDQ model (an int8 export): quantised weights or FakeQuantize nodes after reading.
bool isInt8(const ov::Model& model) {
  for (const auto& op : model.get_ordered_ops()) {
    if (std::string(op->get_type_name()) == "FakeQuantize") return true;
    if (op->get_output_size() == 1 && (op->get_output_element_type(0) == ov::element::i8 ||
                                       op->get_output_element_type(0) == ov::element::u8)) {
      return true;
    }
  }
  return false;
}

class OpenVinoBackend final : public InferenceBackend {
 public:
  explicit OpenVinoBackend(const OpenVinoOptions& o) {
    for (size_t label = 1; label < o.category_ids.size(); ++label)
      label_of_[o.category_ids[label]] = static_cast<int64_t>(label);
    // Said plainly: OpenVINO's own message for a missing file is a page of its source paths.
    std::error_code ec;
    if (!std::filesystem::exists(o.onnx, ec))
      throw std::runtime_error(o.onnx.string() + ": no such file (an ONNX model is needed)");
    if (!std::filesystem::is_regular_file(o.onnx, ec))
      throw std::runtime_error(o.onnx.string() + ": not a file (an ONNX model is needed)");
    bool got_bf16 = false;
    try {
      const std::shared_ptr<ov::Model> model = core_.read_model(o.onnx.string());
      for (const auto& output : model->outputs())
        with_masks_ = with_masks_ || output.get_names().count("masks") > 0;
      const bool int8 = isInt8(*model);
      const bool bf16 = o.bf16 && cpuHasBf16(core_);
      ov::AnyMap config{
          {ov::hint::inference_precision.name(), bf16 ? ov::element::bf16 : ov::element::f32}};
      if (o.threads > 0) config.emplace(ov::inference_num_threads.name(), o.threads);
      const int streams = std::max(1, o.streams);
      if (streams > 1) {
        config.emplace(ov::hint::performance_mode.name(), ov::hint::PerformanceMode::THROUGHPUT);
        config.emplace(ov::num_streams.name(), ov::streams::Num(streams));
      }
      compiled_ = core_.compile_model(model, "CPU", config);
      for (int i = 0; i < streams; ++i)
        requests_.push_back(compiled_.create_infer_request());
      got_bf16 = compiled_.get_property(ov::hint::inference_precision) == ov::element::bf16;
      precision_ = got_bf16 ? "bf16" : "f32";
      if (int8) precision_ = "int8+" + precision_;
      cpu_ = core_.get_property("CPU", ov::device::full_name);
    } catch (const std::exception& e) {
      throw std::runtime_error(o.onnx.string() + ": OpenVINO cannot run it: " + e.what());
    }
    if (o.bf16 && !got_bf16) note_ = " (bf16 asked; this CPU has no bf16: f32)";
    if (requests_.size() > 1) {
      note_ += ", throughput mode: " + std::to_string(requests_.size()) + " streams";
    }
  }

  std::string description() const override {
    return "OpenVINO " + openVinoVersion() + " " + precision_ + " on CPU (" + cpu_ + ")" + note_;
  }
  std::string precision() const override { return precision_; }

  BackendRun run(const std::vector<std::filesystem::path>& paths) override {
    if (requests_.size() == 1) {
      return runFileByFile(paths, [this](const cv::Mat& image) {
        requests_[0].set_input_tensor(imageTensor(image));
        requests_[0].infer();
        return detections(requests_[0], image.rows, image.cols);
      });
    }
    // The call's files decoded first (the tasks pass a chunk of them at a time), then run a
    // stream each; the decoded images stay for the overlays.
    BackendRun out;
    std::vector<cv::Mat> decoded;
    for (const fs::path& path : paths) {
      if (decodeInto(out, path)) decoded.push_back(out.images.back().original);
    }
    std::vector<model::ImageDetections> found = detect(decoded);
    for (size_t i = 0; i < found.size(); ++i)
      out.images[i].detections = std::move(found[i]);
    return out;
  }

  // Each image through the next free request; in throughput mode up to one image a stream in
  // flight, the oldest waited for first.
  std::vector<model::ImageDetections> detect(const std::vector<cv::Mat>& images) override {
    std::vector<model::ImageDetections> out(images.size());
    std::deque<std::pair<size_t, size_t>> in_flight;  // (image, request), oldest first
    std::vector<size_t> free_requests;
    for (size_t r = 0; r < requests_.size(); ++r)
      free_requests.push_back(r);
    const auto finishOldest = [&] {
      const auto [image, request] = in_flight.front();
      in_flight.pop_front();
      requests_[request].wait();
      out[image] = detections(requests_[request], images[image].rows, images[image].cols);
      free_requests.push_back(request);
    };
    for (size_t i = 0; i < images.size(); ++i) {
      if (free_requests.empty()) finishOldest();
      const size_t request = free_requests.back();
      free_requests.pop_back();
      requests_[request].set_input_tensor(imageTensor(images[i]));
      requests_[request].start_async();
      in_flight.emplace_back(i, request);
    }
    while (!in_flight.empty())
      finishOldest();
    return out;
  }

 private:
  // A finished request's detections, masks pasted into the image's h x w.
  model::ImageDetections detections(ov::InferRequest& request, int h, int w) {
    model::ImageDetections d;
    d.boxes = copyOut(request, "boxes", at::kFloat);
    d.scores = copyOut(request, "scores", at::kFloat);
    const at::Tensor ids = copyOut(request, "labels", at::kLong);
    d.labels = at::empty_like(ids);
    for (int64_t k = 0; k < ids.size(0); ++k) {
      const auto found = label_of_.find(ids[k].item<int64_t>());
      if (found == label_of_.end()) {
        throw std::runtime_error("the exported model gave category id " +
                                 std::to_string(ids[k].item<int64_t>()) +
                                 ", which the spec's categories do not have");
      }
      d.labels[k] = found->second;
    }
    if (with_masks_) {
      d.masks = ops::paste_masks_binary(copyOut(request, "masks", at::kFloat), d.boxes, h, w, 0.5);
    }
    return d;
  }

  ov::Core core_;
  ov::CompiledModel compiled_;
  std::vector<ov::InferRequest> requests_;  // one a stream
  std::map<int64_t, int64_t> label_of_;
  bool with_masks_ = false;
  std::string precision_, cpu_, note_;
};

}  // namespace

std::unique_ptr<InferenceBackend> makeOpenVinoBackend(const OpenVinoOptions& options) {
  return std::make_unique<OpenVinoBackend>(options);
}

std::string openVinoVersion() {
  const ov::Version v = ov::get_openvino_version();
  return v.buildNumber;
}

}  // namespace mrcnn::engine
