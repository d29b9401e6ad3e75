// A pruned model's architecture (engine/prune): the output channels of its prunable
// convolutions, by torchvision state_dict name without ".weight":
//   backbone.body.conv1, backbone.body.layer<s>.<b>.conv<k>,
//   backbone.body.layer<s>.<b>.downsample.0 rpn.head.conv.<i>.0, roi_heads.mask_head.<i>.0
// Every other shape follows from these (the next convolution's inputs, the batch norms, the
// FPN laterals, the RPN predictors, the mask predictor's input). MaskRCNNOptions::conv_widths
// holds them; a standard model has none, and naming a convolution at its standard width
// changes nothing.
//
// Since the widths are the shapes of the weights, a model's architecture is read from its
// weights (convWidthsOf): a pruned model, a run retrained from one and any checkpoint of it
// rebuild from their own tensors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/model/state_dict.h"

namespace mrcnn::model {

using ConvWidths = std::map<std::string, int64_t>;

// Whether `name` (a module, no ".weight") is one of the prunable convolutions above.
bool isPrunableConv(const std::string& name);

// The output channels of every prunable convolution in a model's state_dict (no "model."
// prefix): the first dimension of each "<name>.weight".
ConvWidths convWidthsOf(const StateDict& state);

// The standard width of a prunable convolution: the ResNet of `depth`'s (64 << (s - 1) a
// block's inner convolutions, four times that a bottleneck's last and its projection, 64 the
// stem), `rpn_channels` the RPN head's, mask_head_layers[i] the mask head's. 0 for a name
// past those (a mask head layer it does not have).
int64_t standardConvWidth(const std::string& name, int depth, int64_t rpn_channels,
                          const std::vector<int64_t>& mask_head_layers);

// The entries of `widths` that differ from the standard ones: what makes a model pruned.
ConvWidths nonStandardWidths(const ConvWidths& widths, int depth, int64_t rpn_channels,
                             const std::vector<int64_t>& mask_head_layers);

// `widths` as a JSON object {"<name>": width, ...}, for records people and tools read.
std::string convWidthsJson(const ConvWidths& widths);

}  // namespace mrcnn::model
