// A small torchvision-shaped Mask R-CNN and a batch for it, shared by the model-level tests
// (activation layouts, CUDA graphs): ResNet-10 FPN, 4 classes, images of 128x160 with two
// objects each.
#pragma once

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cstdint>

#include "engine/model/mask_rcnn.h"

namespace mrcnn::testing::small_mask_rcnn {

constexpr int64_t kHeight = 128, kWidth = 160;

// A small torchvision-shaped model (ResNet-10 FPN, frozen batch norms, 4 classes) in `layout`,
// its weights drawn from `seed` with filters of unequal norms and non-trivial batch norms.
inline model::MaskRCNN makeModel(model::ActivationLayout layout, uint64_t seed) {
  model::MaskRCNNOptions o = model::MaskRCNNOptions::torchvisionResNet50FPN(4);
  o.backbone.resnet.depth = 10;
  o.roi_heads.mask_head_layers = {64, 48};
  o.layout = layout;
  at::manual_seed(seed);
  model::MaskRCNN m(o);
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters()) {
    at::Tensor w = p.value();
    if (w.dim() == 4) w.mul_(at::empty({w.size(0), 1, 1, 1}).uniform_(0.3, 1.5));
  }
  for (auto& b : m->named_buffers()) {
    if (b.key().ends_with("running_mean")) b.value().uniform_(-0.1, 0.1);
    if (b.key().ends_with("running_var")) b.value().uniform_(0.5, 1.5);
  }
  return m;
}

inline model::ImageSizes sizesOf(int64_t n) {
  model::ImageSizes s;
  s.padded = {kHeight, kWidth};
  for (int64_t i = 0; i < n; ++i) s.images.push_back({kHeight, kWidth});
  return s;
}

// Two objects an image, filled-rectangle masks, the samplers keyed so both models draw alike.
inline model::MaskRCNNTargets targetsOf(int64_t n) {
  model::MaskRCNNTargets t;
  for (int64_t i = 0; i < n; ++i) {
    const float o = 10.0F * static_cast<float>(i);
    t.boxes.push_back(at::tensor({20.0F + o, 16.0F, 90.0F + o, 80.0F, 60.0F, 50.0F + o, 140.0F,
                                  120.0F},
                                 at::kFloat)
                          .view({2, 4}));
    t.labels.push_back(at::tensor({1, 3}, at::kLong));
    at::Tensor masks = at::zeros({2, kHeight, kWidth}, at::kByte);
    masks[0].slice(0, 16, 80).slice(1, 20 + 10 * i, 90 + 10 * i).fill_(1);
    masks[1].slice(0, 50 + 10 * i, 120).slice(1, 60, 140).fill_(1);
    t.masks.push_back(masks);
    t.sample_keys.push_back(1000 + static_cast<uint64_t>(i));
  }
  return t;
}

}  // namespace mrcnn::testing::small_mask_rcnn
