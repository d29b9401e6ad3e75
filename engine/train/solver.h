// The optimiser: SGD with momentum over named parameters, with TAO MaskRCNN's regularisation,
// global gradient-norm clipping, gradient accumulation and the fp16 loss scaler's step
// skipping. Our own loop rather than torch::optim::SGD so that decay can depend on the
// parameter's name (TAO's rule below), the L1 term exists, and the state is kept by name.
//
// What TAO does (nvidia_tao_tf1/cv/mask_rcnn/models/mask_rcnn_model.py, _model_fn):
//  - L2: l2_weight_decay × Σ tf.nn.l2_loss(v) = l2 × Σ v²/2 is added to the loss, so the
//    gradient gains l2 × v; L1: tf.keras.regularizers.l1(l1_weight_decay / 2) is added, so
//    the gradient gains l1/2 × sign(v). Both over trainable variables whose names contain
//    none of "batch_normalization", "bias", "beta": biases and batch-norm parameters are not
//    decayed. Our parameters carry torchvision's names, where those are the ".bias"
//    parameters and the 1-D weights of normalisation layers; the rule used here is "not decayed
//    when the name ends in 'bias' or the parameter has fewer than 2 dimensions".
//  - The gradients of variables named "bias" or "beta" are then doubled (Detectron's 2× bias
//    learning rate): bias_gradient_scale, applied to names ending in "bias".
//  - tf.train.MomentumOptimizer: accum = momentum × accum + grad; var −= lr × accum, with
//    accum starting at 0 — the same update as torch.optim.SGD (dampening 0, no Nesterov),
//    whose buffer starts as the first gradient.
//  - TAO's TF1 MaskRCNN does not clip; global_gradient_clip_ratio (NVIDIA's MaskRCNN) clips
//    the global norm of the full gradient, regularisation included, as
//    torch.nn.utils.clip_grad_norm_ does (coefficient max_norm / (norm + 1e-6), at most 1).
//
// One step, in order: unscale (÷ loss scale × accumulation steps) → inf/NaN check (skip the
// step and tell the loss scaler) → + L2 and L1 terms → × bias scale → clip → momentum update
// → gradients zeroed.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/state_dict.h"
#include "specs/experiment.pb.h"

namespace torch::nn {
class Module;
}

namespace mrcnn::train {

class LossScaler;

struct SolverOptions {
  double momentum = 0.9;
  double l2_weight_decay = 0;
  double l1_weight_decay = 0;  // TAO's meaning: gradient term l1/2 × sign(w)
  double clip_norm = 0;        // global_gradient_clip_ratio; 0 = no clipping
  // Micro-batches whose gradients add up before one step; each micro-batch's loss is its own
  // mean, and the step uses the mean over micro-batches (one big batch of equal parts).
  uint32_t accumulation_steps = 1;
  double bias_gradient_scale = 2.0;  // TAO doubles bias gradients; 1 turns it off
};

// From the spec: momentum, l2_weight_decay, l1_weight_decay, global_gradient_clip_ratio,
// gradient_accumulation_steps; bias_gradient_scale stays TAO's 2.
SolverOptions solverOptionsFromSpec(const spec::Experiment& spec);

using NamedParameters = std::vector<std::pair<std::string, at::Tensor>>;

struct StepResult {
  bool applied = false;  // false: skipped for inf/NaN gradients (nothing changed)
  bool finite = true;    // the unscaled gradients were all finite
  double grad_norm = 0;  // global norm before clipping (regularisation included); 0 if skipped
  bool clipped = false;
};

class Solver {
 public:
  // `parameters`: the trainable ones (requires_grad), by name; names must be unique.
  Solver(NamedParameters parameters, SolverOptions options);

  // The module's parameters that require gradients, by their state_dict names.
  static NamedParameters trainableParameters(const torch::nn::Module& module);

  // Whether TAO's rule decays this parameter (see above).
  static bool isDecayed(const std::string& name, const at::Tensor& parameter);

  // Applies the gradients accumulated since the last step with learning rate `lr`, then
  // zeroes them. With a scaler, gradients are divided by its scale and the step's outcome is
  // reported to it (update); without one, inf/NaN gradients still skip the step and
  // StepResult says so (the caller decides to stop). Parameters without a gradient are left
  // alone and their momentum is not touched, as torch.optim.SGD does.
  StepResult step(double lr, LossScaler* scaler = nullptr);

  // Sets every gradient to undefined (as zero_grad(set_to_none=True)).
  void zeroGrad();

  const SolverOptions& options() const { return options_; }
  const NamedParameters& parameters() const { return parameters_; }
  uint64_t stepsTaken() const { return steps_taken_; }  // applied steps

  // "momentum_buffer.<parameter name>" for each parameter that has one, and "steps_taken",
  // under `prefix`.
  model::StateDict stateDict(const std::string& prefix = "") const;
  // Replaces the momentum buffers. Throws model::StateDictError naming `source`: a buffer for
  // a parameter the model does not have, a shape or type mismatch.
  void loadStateDict(const model::StateDict& state, const std::string& prefix,
                     const std::string& source);

 private:
  NamedParameters parameters_;
  std::vector<bool> decayed_, bias_;
  std::vector<at::Tensor> momentum_;  // undefined until the parameter's first step
  SolverOptions options_;
  uint64_t steps_taken_ = 0;
};

}  // namespace mrcnn::train
