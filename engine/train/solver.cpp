#include "engine/train/solver.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

#include "engine/train/loss_scaler.h"

namespace mrcnn::train {
namespace {

// The decimal the spec's float32 field was written as (0.9, not 0.899999976).
double decimalOf(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf - 1, f);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const std::string kBufferKey = "momentum_buffer.";

}  // namespace

SolverOptions solverOptionsFromSpec(const spec::Experiment& spec) {
  SolverOptions o;
  o.momentum = decimalOf(spec.momentum());
  o.l2_weight_decay = decimalOf(spec.l2_weight_decay());
  o.l1_weight_decay = decimalOf(spec.l1_weight_decay());
  o.clip_norm = decimalOf(spec.global_gradient_clip_ratio());
  o.accumulation_steps = std::max<uint32_t>(1, spec.gradient_accumulation_steps());
  return o;
}

Solver::Solver(NamedParameters parameters, SolverOptions options)
    : parameters_(std::move(parameters)), options_(options) {
  if (options_.accumulation_steps == 0) options_.accumulation_steps = 1;
  std::set<std::string> seen;
  for (const auto& [name, p] : parameters_) {
    if (!seen.insert(name).second)
      throw std::invalid_argument("Solver: parameter " + name + " given twice");
    if (!p.defined()) throw std::invalid_argument("Solver: parameter " + name + " is undefined");
    decayed_.push_back(isDecayed(name, p));
    bias_.push_back(endsWith(name, "bias"));
  }
  momentum_.resize(parameters_.size());
}

NamedParameters Solver::trainableParameters(const torch::nn::Module& module) {
  NamedParameters out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    if (item.value().requires_grad()) out.emplace_back(item.key(), item.value());
  }
  return out;
}

bool Solver::isDecayed(const std::string& name, const at::Tensor& parameter) {
  return !endsWith(name, "bias") && parameter.dim() >= 2;
}

StepResult Solver::step(double lr, LossScaler* scaler) {
  RECORD_USER_SCOPE("mrcnn/solver");
  at::NoGradGuard no_grad;
  StepResult result;
  std::vector<size_t> index;  // parameters with a gradient this step
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& g = parameters_[i].second.grad();
    if (g.defined()) {
      index.push_back(i);
      grads.push_back(g);
    }
  }
  if (grads.empty()) {
    if (scaler) scaler->update(false);
    return result;
  }

  // Unscale: the loss scale and the mean over micro-batches in one multiplication.
  const double scale = (scaler ? scaler->scale() : 1.0) * options_.accumulation_steps;
  if (scale != 1.0) at::_foreach_mul_(grads, 1.0 / scale);

  // inf/NaN anywhere: the norm of the norms is not finite. Read with the clipped norm below
  // (one wait for the device a step); until then the gradients are changed as if finite,
  // which a non-finite step throws away.
  const std::vector<at::Tensor> raw_norms = at::_foreach_norm(grads, 2);
  const at::Tensor all_finite = at::stack(raw_norms).isfinite().all();

  // TAO's regularisation (part of its loss, hence of the clipped gradient) and bias scale,
  // each over its tensors in one multi-tensor operation (on a GPU a few kernel launches in
  // all, where one a tensor were ~300 a step for a ResNet-50 FPN; on the CPU LibTorch runs
  // them tensor by tensor, the same arithmetic as before). g += l2 × p is the single kernel
  // torch.optim.SGD uses for weight_decay.
  const double l1_term = options_.l1_weight_decay / 2.0;
  std::vector<at::Tensor> decayed_grads, decayed_params, bias_grads;
  for (size_t k = 0; k < index.size(); ++k) {
    const size_t i = index[k];
    if (decayed_[i]) {
      decayed_grads.push_back(grads[k]);
      decayed_params.push_back(parameters_[i].second);
    }
    if (bias_[i]) bias_grads.push_back(grads[k]);
  }
  if (!decayed_grads.empty()) {
    if (options_.l2_weight_decay != 0)
      at::_foreach_add_(decayed_grads, decayed_params, options_.l2_weight_decay);
    if (l1_term != 0) at::_foreach_add_(decayed_grads, at::_foreach_sign(decayed_params), l1_term);
  }
  if (!bias_grads.empty() && options_.bias_gradient_scale != 1.0)
    at::_foreach_mul_(bias_grads, options_.bias_gradient_scale);

  // As torch.nn.utils.clip_grad_norm_: the 2-norm of the per-tensor 2-norms, coefficient
  // max_norm / (norm + 1e-6) clamped to 1, applied even when 1 (a multiplication by 1 is exact).
  const at::Tensor total = at::linalg_vector_norm(at::stack(at::_foreach_norm(grads, 2)), 2);
  at::Tensor clamped;
  if (options_.clip_norm > 0) {
    const at::Tensor coef = (total + 1e-6).reciprocal() * options_.clip_norm;
    clamped = at::clamp_max(coef, 1.0);
    at::_foreach_mul_(grads, clamped);
  }
  // Finite or not, the norm and the clipping coefficient to the host in one copy (on a GPU,
  // one wait).
  std::vector<at::Tensor> read = {all_finite.to(at::kDouble).reshape({1}),
                                  total.to(at::kDouble).reshape({1})};
  if (clamped.defined()) read.push_back(clamped.to(at::kDouble).reshape({1}));
  const at::Tensor host = at::cat(read).cpu();
  const double* v = host.const_data_ptr<double>();
  const bool finite = v[0] != 0.0;
  if (scaler) scaler->update(!finite);
  if (!finite) {
    result.finite = false;
    zeroGrad();
    return result;
  }
  result.grad_norm = v[1];
  if (clamped.defined()) result.clipped = v[2] < 1.0;

  // torch.optim.SGD's update (dampening 0, no Nesterov): buf = momentum × buf + d (the first
  // step: buf = d), p −= lr × buf; multi-tensor as above.
  std::vector<at::Tensor> params, directions;
  std::vector<at::Tensor> buffers, buffered_grads;  // the parameters with a buffer already
  for (size_t k = 0; k < index.size(); ++k) {
    const size_t i = index[k];
    params.push_back(parameters_[i].second);
    if (options_.momentum == 0) {
      directions.push_back(grads[k]);
      continue;
    }
    at::Tensor& buf = momentum_[i];
    if (!buf.defined()) {
      buf = grads[k].clone().detach();
    } else {
      buffers.push_back(buf);
      buffered_grads.push_back(grads[k]);
    }
    directions.push_back(buf);
  }
  if (!buffers.empty()) {
    at::_foreach_mul_(buffers, options_.momentum);
    at::_foreach_add_(buffers, buffered_grads);
  }
  at::_foreach_add_(params, directions, -lr);
  zeroGrad();
  ++steps_taken_;
  result.applied = true;
  return result;
}

void Solver::zeroGrad() {
  for (auto& [name, p] : parameters_) {
    if (p.grad().defined()) p.mutable_grad() = at::Tensor();
  }
}

model::StateDict Solver::stateDict(const std::string& prefix) const {
  model::StateDict out;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (momentum_[i].defined())
      out.emplace_back(prefix + kBufferKey + parameters_[i].first, momentum_[i].detach());
  }
  out.emplace_back(prefix + "steps_taken",
                   at::scalar_tensor(static_cast<int64_t>(steps_taken_), at::kLong));
  return out;
}

void Solver::loadStateDict(const model::StateDict& state, const std::string& prefix,
                           const std::string& source) {
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < parameters_.size(); ++i)
    by_name.emplace(parameters_[i].first, i);
  std::vector<at::Tensor> buffers(parameters_.size());
  std::vector<std::string> problems;
  uint64_t steps = 0;
  bool have_steps = false;
  for (const auto& [key, t] : state) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = key.substr(prefix.size());
    if (rest == "steps_taken") {
      if (t.numel() != 1 || t.item<int64_t>() < 0) {
        problems.push_back(key + ": must be a non-negative scalar");
      } else {
        steps = static_cast<uint64_t>(t.item<int64_t>());
        have_steps = true;
      }
      continue;
    }
    if (rest.compare(0, kBufferKey.size(), kBufferKey) != 0) {
      problems.push_back(key + ": not optimizer state");
      continue;
    }
    const std::string name = rest.substr(kBufferKey.size());
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      problems.push_back(key + ": the model has no trainable parameter " + name);
      continue;
    }
    const at::Tensor& p = parameters_[it->second].second;
    if (t.sizes() != p.sizes() || t.scalar_type() != p.scalar_type()) {
      problems.push_back(key + ": shape " + c10::str(t.sizes()) + " " +
                         std::string(c10::toString(t.scalar_type())) + ", the parameter has " +
                         c10::str(p.sizes()) + " " + std::string(c10::toString(p.scalar_type())));
      continue;
    }
    // In the parameter's layout (a checkpoint holds them contiguous; a channels-last weight's
    // gradient is channels-last): the update's multi-tensor operations run fused on a GPU only
    // over tensors of the same strides.
    buffers[it->second] = at::empty_like(p).copy_(t);
  }
  if (!have_steps && problems.empty()) problems.push_back(prefix + "steps_taken: missing");
  if (!problems.empty()) {
    std::string message = source + ": the optimizer state does not fit the model:";
    for (const auto& p : problems)
      message += "\n  " + p;
    throw model::StateDictError(message);
  }
  momentum_ = std::move(buffers);
  steps_taken_ = steps;
}

}  // namespace mrcnn::train
