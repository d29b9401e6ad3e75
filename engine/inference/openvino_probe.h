// An exported model read by OpenVINO's runtime for what is inside it: each image's values of
// named tensors of the graph (made graph outputs beforehand, exporter::withProbeOutputs).
// int8 calibration measures the activations of the fp32 export with it, in f32; the int8
// stage compares two int8 models' detections with the fp32 export's through it.
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <map>
#include <memory>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

namespace mrcnn::engine {

class OpenVinoProbe {
 public:
  // Throws std::runtime_error naming the file when OpenVINO cannot read or compile it.
  OpenVinoProbe(const std::filesystem::path& onnx, std::vector<std::string> outputs,
                int threads = 0);
  ~OpenVinoProbe();
  OpenVinoProbe(const OpenVinoProbe&) = delete;
  OpenVinoProbe& operator=(const OpenVinoProbe&) = delete;

  // The outputs for one image (BGR, 8 bits), by name (float32 or int64 tensors); their memory
  // is reused by the next call.
  std::map<std::string, at::Tensor> run(const cv::Mat& bgr);

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::vector<std::string> outputs_;
};

}  // namespace mrcnn::engine
