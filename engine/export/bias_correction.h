// Bias correction for the int8 export (quantize_qdq.h): int8 weights are the float weights
// rounded per output channel, and the rounding errors of a channel do not cancel on the inputs
// the layer sees: the int8 output is off by a constant a channel. Its bias takes that constant
// back: the mean, over the calibration images, of (W - W_int8) applied to the layer's input.
//
// The layer is linear, so that mean needs only the input's mean over the windows the outputs
// read: for a convolution, per input channel and kernel position, the mean over every output
// position (with the padding's zeros) of the input value that position multiplies there; for a
// fully connected layer, per input feature, its mean over the rows; for a transposed
// convolution, per input channel and kernel position, the input summed over the positions whose
// output lies inside the result, over the number of outputs. Calibration measures those means
// (InputMeanCollector, fed the same probed activations as the ranges) and the cache keeps them,
// so that the correction is exact for the weights any later choice gives a layer (7 or 8 bits,
// int8 or float) without running the images again.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/export/quantize_qdq.h"

namespace onnx {
class NodeProto;
}

namespace mrcnn::exporter {

// What a layer's node does with its input, read from the ONNX node (Conv, ConvTranspose, Gemm).
struct LayerWindows {
  std::string op;
  std::vector<int64_t> kernel, strides, pads, dilations, output_padding;  // 2-D
  int64_t group = 1;
  bool trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
  // False where the padding is not given as explicit pads (auto_pad) or a transposed
  // convolution names its output_shape: such a layer is not corrected.
  bool describable = true;
};

// The windows of a Conv, ConvTranspose or Gemm node whose weights have `weight_dims`.
LayerWindows layerWindows(const onnx::NodeProto& node, const std::vector<int64_t>& weight_dims);

class InputMeanCollector {
 public:
  // Every layer of `model_bytes` int8 could run (quantize_qdq.h's candidates: a Conv,
  // ConvTranspose or Gemm whose weights are a float initializer), each of its uses. Throws
  // std::invalid_argument when the bytes are not an ONNX model.
  explicit InputMeanCollector(const std::string& model_bytes);
  // One image's values of an activation; every listed layer reading it counts them.
  void add(const std::string& value, const at::Tensor& tensor);
  // Over the images added so far; a layer whose windows this cannot describe (auto_pad, an
  // output_shape) or that saw nothing is absent.
  InputMeans means() const;

 private:
  struct Use {
    std::string weight;
    LayerWindows windows;
  };
  struct Sum {
    at::Tensor total;  // double, the mean's shape
    int64_t positions = 0;
  };
  std::multimap<std::string, Use> uses_;  // by the activation read
  std::map<std::string, Sum> sums_;       // by weight
};

// The shift that corrects the layer's bias (added to it; already divided by a Gemm's beta):
// per output channel, the mean of (weights - dequantised int8 weights) applied to the input.
// `weight_error` is in the layer's weight layout. Throws std::invalid_argument when `mean`
// does not fit the weights.
at::Tensor biasShift(const LayerWindows& windows, const at::Tensor& weight_error,
                     const InputMean& mean);

}  // namespace mrcnn::exporter
