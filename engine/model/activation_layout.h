// Where the model's activations sit in memory: NCHW (torchvision's, PyTorch's default) or
// channels-last (NHWC, a pixel's channels side by side). The values are the same either way
// (up to the convolution libraries' float rounding); the speed is not: oneDNN's and cuDNN's
// fastest convolutions read NHWC, and an NCHW tensor is transposed around each of them.
// The spec's `memory_format` chooses (auto, nchw, nhwc); the model applies it to the images
// it gets and to its convolution weights.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <torch/nn/module.h>

#include <optional>
#include <string>

namespace mrcnn::model {

enum class ActivationLayout { Auto, Nchw, Nhwc };

// "auto", "nchw" or "nhwc"; std::nullopt for anything else.
std::optional<ActivationLayout> parseActivationLayout(const std::string& name);

// What runs: channels-last or not. Auto takes channels-last on every device and in every
// mode (docs/BENCHMARKS.md, "Channels-last (NHWC) on the CPU": on the AMX Xeon, ResNet-50 FPN
// at 800x1333 trains and infers 1.2-2.3x faster in channels-last; at the shapes spec's
// 128x192 the two layouts are within that machine's run-to-run noise); a GPU's figures come
// from scripts/gpu_check.sh, which times NCHW beside it.
bool channelsLastFor(ActivationLayout layout);

// One line for the logs: "channels-last (NHWC)" or "NCHW", with "auto: " in front where the
// spec left the choice to the engine.
std::string describeLayout(ActivationLayout layout);

// Every 4-D parameter of `module` (the convolutions' weights) put in `format`, in place (the
// parameters stay the same objects, so an optimizer's references hold): those already in it
// are left alone. Returns how many were moved.
int setConvWeightLayout(torch::nn::Module& module, at::MemoryFormat format);

}  // namespace mrcnn::model
