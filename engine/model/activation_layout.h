// Where the model's activations sit in memory: NCHW (torchvision's, PyTorch's default) or
// channels-last (NHWC, a pixel's channels side by side). The values are the same either way
// (up to the convolution libraries' float rounding); the speed is not: oneDNN's and cuDNN's
// fastest convolutions read NHWC, and an NCHW tensor is transposed around each of them.
// The spec's `memory_format` chooses (auto, nchw, nhwc); the model applies it to the images
// it gets and to its convolution weights.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/MemoryFormat.h>
#include <torch/nn/module.h>

#include <optional>
#include <string>

namespace mrcnn::model {

enum class ActivationLayout { Auto, Nchw, Nhwc };

// "auto", "nchw" or "nhwc"; std::nullopt for anything else.
std::optional<ActivationLayout> parseActivationLayout(const std::string& name);

// What runs: channels-last or not, for this device and mode. Auto takes channels-last on a
// GPU and for inference on the CPU, NCHW for training on the CPU (docs/BENCHMARKS.md,
// "Channels-last": on the CPU channels-last speeds inference and slows the training step).
bool channelsLastFor(ActivationLayout layout, const c10::Device& device, bool training);

// One line for the logs: "channels-last (NHWC)" or "NCHW", with "auto: " in front where the
// spec left the choice to the engine.
std::string describeLayout(ActivationLayout layout, const c10::Device& device, bool training);

// Every 4-D parameter of `module` (the convolutions' weights) put in `format`, in place (the
// parameters stay the same objects, so an optimizer's references hold): those already in it
// are left alone. Returns how many were moved.
int setConvWeightLayout(torch::nn::Module& module, at::MemoryFormat format);

}  // namespace mrcnn::model
