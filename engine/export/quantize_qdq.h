// int8 as a graph pass over the fp32 export (onnx_export.h): each convolution and fully
// connected layer int8 runs gets QuantizeLinear/DequantizeLinear on its input (the activation
// range from calibration, engine/export/calibration.h) and its weights stored as int8 with a
// DequantizeLinear (symmetric, one scale per output channel); biases stay float. This is the
// QDQ form OpenVINO, ONNX Runtime and TensorRT read as int8. Activations are symmetric too:
// uint8 from 0 where calibration saw no negative value (after a ReLU), int8 around 0 elsewhere.
//
// What stays float is the policy's choice, by the layer's weight name: by default the layers
// whose outputs are read as numbers rather than passed on (objectness and box deltas of the
// RPN, class scores and box regression, the mask logits). Every candidate layer is listed
// with what was decided and why.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mrcnn::exporter {

// What calibration measured of one activation: its extremes and, averaged over the images,
// the values below which `percentile` percent (and above which 100 - percentile percent) of
// its elements fell.
struct ActivationRange {
  double min = 0, max = 0;
  double low = 0, high = 0;
  int64_t images = 0;
};
using ActivationRanges = std::map<std::string, ActivationRange>;

// One layer's input means for its bias correction (engine/export/bias_correction.h), by its
// weights' name: shape [inputs, kernel rows, kernel cols] (convolutions) or [inputs] (fully
// connected), the values row-major, and the number of outputs they were averaged over.
struct InputMean {
  std::vector<int64_t> shape;
  std::vector<double> values;
  int64_t positions = 0;
};
using InputMeans = std::map<std::string, InputMean>;

// What calibration measured: the activations' ranges and the quantised layers' input means.
struct Calibration {
  ActivationRanges ranges;
  InputMeans input_means;
};

enum class RangeChoice { kMinMax, kPercentile };

struct Int8Policy {
  RangeChoice range = RangeChoice::kPercentile;
  // Weights of layers whose input is signed in [-63, 63] instead of [-127, 127]. A CPU without
  // VNNI (AVX2, AVX-512 without VNNI) multiplies uint8 by int8 in pairs summed into int16,
  // and runs a signed input as uint8 shifted by 128: with full-range weights those sums
  // overflow (measured: FPN outputs through OpenVINO at 16-17 dB against fp32 instead of 33).
  bool seven_bit_signed = true;
  // A layer that reads the output of a quantised layer directly (no activation between: the
  // FPN's top 3x3 after its 1x1, the RPN's 3x3 on the FPN's outputs) stays float. OpenVINO
  // 2026.4's CPU plugin gives zeros from such a pair in int8 where the first layer's bias is
  // all zero (measured with the seeded R50-FPN, whose FPN biases torchvision starts at zero:
  // the RPN saw nothing at each level whose FPN 3x3 had a zero bias; a bias of 1e-6 there, or
  // the bias correction below, and OpenVINO computes it as ONNX Runtime does; dropping the
  // bias does not help). Elsewhere int8 there costs what int8 costs, and they are 15-20% of
  // the int8 model's time. The export task measures which (engine/tasks/export_int8.h) and
  // quantises them where fp32's detections stay.
  bool float_after_quantised = true;
  // Each quantised layer's bias takes back the mean error its int8 weights make on the
  // calibration images (bias_correction.h), where the calibration measured its input means.
  bool bias_correction = true;
  // Layers that stay float: a weight name ("rpn/head/cls_logits.weight") and why.
  std::vector<std::pair<std::string, std::string>> keep_float;
};

// The output layers listed above.
Int8Policy defaultInt8Policy();

// A layer int8 could run: a Conv, ConvTranspose or Gemm whose weights are an initializer.
struct QuantCandidate {
  std::string weight;               // the weights' initializer
  std::string op;                   // "Conv", "ConvTranspose", "Gemm"
  std::vector<std::string> inputs;  // the activation it reads, per node using these weights
  // The layers (weights) whose outputs those nodes read directly, if any.
  std::vector<std::string> producers;
};

// The candidates of a serialized fp32 export, in the graph's order. Throws
// std::invalid_argument when the bytes are not an ONNX model.
std::vector<QuantCandidate> quantCandidates(const std::string& model_bytes);

// The activations calibration must measure for `policy`: the inputs of the layers it
// quantises (each once).
std::vector<std::string> calibrationValues(const std::string& model_bytes,
                                           const Int8Policy& policy);

// The model with each of `values` as an extra float output (for calibration).
std::string withProbeOutputs(const std::string& model_bytes,
                             const std::vector<std::string>& values);

struct LayerDecision {
  std::string weight, op;
  bool quantised = false;
  std::string why;
  // The bias correction, where made: the shift's mean and largest magnitude over the channels.
  bool bias_corrected = false;
  double bias_shift_mean = 0, bias_shift_max = 0;
};

struct Int8Model {
  std::string bytes;  // the serialized QDQ model
  std::vector<LayerDecision> layers;
  int64_t nodes = 0;
  int64_t weight_bytes = 0;
};

// The QDQ model. Throws std::invalid_argument naming the activation when the calibration's
// ranges lack one the policy quantises (a calibration cache from another model),
// std::runtime_error with the checker's message when the result fails the ONNX checks. A
// quantised layer without input means keeps its bias as it is (its reason says so).
Int8Model quantizeQdq(const std::string& model_bytes, const Calibration& calibration,
                      const Int8Policy& policy);

// The scale and zero point of an activation's range under `choice`: uint8 from 0 when nothing
// negative was seen, else int8 symmetric.
struct ActivationQuant {
  float scale = 1;
  bool is_unsigned = true;
};
ActivationQuant activationQuant(const ActivationRange& range, RangeChoice choice);

}  // namespace mrcnn::exporter
