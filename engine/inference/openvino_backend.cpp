#include "engine/inference/openvino_backend.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <opencv2/core.hpp>
#include <openvino/openvino.hpp>
#include <stdexcept>

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
    try {
      const std::shared_ptr<ov::Model> model = core_.read_model(o.onnx.string());
      for (const auto& output : model->outputs())
        with_masks_ = with_masks_ || output.get_names().count("masks") > 0;
      const bool int8 = isInt8(*model);
      const bool bf16 = o.bf16 && cpuHasBf16(core_);
      ov::AnyMap config{
          {ov::hint::inference_precision.name(), bf16 ? ov::element::bf16 : ov::element::f32}};
      if (o.threads > 0) config.emplace(ov::inference_num_threads.name(), o.threads);
      compiled_ = core_.compile_model(model, "CPU", config);
      request_ = compiled_.create_infer_request();
      precision_ = compiled_.get_property(ov::hint::inference_precision) == ov::element::bf16
                       ? "bf16"
                       : "f32";
      if (int8) precision_ = "int8+" + precision_;
      cpu_ = core_.get_property("CPU", ov::device::full_name);
    } catch (const std::exception& e) {
      throw std::runtime_error(o.onnx.string() + ": OpenVINO cannot run it: " + e.what());
    }
    if (o.bf16 && precision_ != "bf16") note_ = " (bf16 asked; this CPU has no bf16: f32)";
  }

  std::string description() const override {
    return "OpenVINO " + openVinoVersion() + " " + precision_ + " on CPU (" + cpu_ + ")" + note_;
  }
  std::string precision() const override { return precision_; }

  BackendRun run(const std::vector<std::filesystem::path>& paths) override {
    return runFileByFile(paths, [this](const cv::Mat& image) { return detectOne(image); });
  }

  std::vector<model::ImageDetections> detect(const std::vector<cv::Mat>& images) override {
    std::vector<model::ImageDetections> out;
    for (const cv::Mat& image : images)
      out.push_back(detectOne(image));
    return out;
  }

 private:
  model::ImageDetections detectOne(const cv::Mat& bgr) {
    const int h = bgr.rows, w = bgr.cols;
    request_.set_input_tensor(imageTensor(bgr));
    request_.infer();

    model::ImageDetections d;
    d.boxes = copyOut(request_, "boxes", at::kFloat);
    d.scores = copyOut(request_, "scores", at::kFloat);
    const at::Tensor ids = copyOut(request_, "labels", at::kLong);
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
      d.masks = ops::paste_masks_binary(copyOut(request_, "masks", at::kFloat), d.boxes, h, w, 0.5);
    }
    return d;
  }

  ov::Core core_;
  ov::CompiledModel compiled_;
  ov::InferRequest request_;
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
