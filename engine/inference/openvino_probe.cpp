#include "engine/inference/openvino_probe.h"

#include <ATen/ATen.h>

#include <openvino/openvino.hpp>
#include <stdexcept>

#include "engine/inference/openvino_input.h"

namespace mrcnn::engine {

struct OpenVinoProbe::State {
  ov::Core core;
  ov::CompiledModel compiled;
  ov::InferRequest request;
};

OpenVinoProbe::OpenVinoProbe(const std::filesystem::path& onnx, std::vector<std::string> outputs,
                             int threads)
    : state_(std::make_unique<State>()), outputs_(std::move(outputs)) {
  try {
    ov::AnyMap config{{ov::hint::inference_precision.name(), ov::element::f32}};
    if (threads > 0) config.emplace(ov::inference_num_threads.name(), threads);
    state_->compiled =
        state_->core.compile_model(state_->core.read_model(onnx.string()), "CPU", config);
    state_->request = state_->compiled.create_infer_request();
  } catch (const std::exception& e) {
    throw std::runtime_error(onnx.string() + ": OpenVINO cannot run it: " + e.what());
  }
}

OpenVinoProbe::~OpenVinoProbe() = default;

std::map<std::string, at::Tensor> OpenVinoProbe::run(const cv::Mat& bgr) {
  state_->request.set_input_tensor(imageTensor(bgr));
  state_->request.infer();
  std::map<std::string, at::Tensor> out;
  for (const std::string& name : outputs_) {
    const ov::Tensor t = state_->request.get_tensor(name);
    const ov::element::Type type = t.get_element_type();
    if (type != ov::element::f32 && type != ov::element::i64)
      throw std::runtime_error("the probed tensor " + name + " is neither float32 nor int64");
    std::vector<int64_t> shape;
    for (size_t d : t.get_shape())
      shape.push_back(static_cast<int64_t>(d));
    out[name] = at::from_blob(const_cast<void*>(t.data()), shape,
                              at::TensorOptions().dtype(type == ov::element::f32 ? at::kFloat
                                                                                 : at::kLong));
  }
  return out;
}

}  // namespace mrcnn::engine
