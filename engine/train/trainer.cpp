#include "engine/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "dataset/loader/sample_order.h"
#include "engine/exit_codes.h"
#include "engine/model/device_copy.h"
#include "engine/runtime/autocast_scope.h"
#include "engine/setup/data_setup.h"
#include "engine/train/device_batches.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/solver.h"
#include "engine/train/stop_signal.h"

namespace mrcnn::train {
namespace {

using Clock = std::chrono::steady_clock;

StepLosses reportOf(const model::MaskRCNNLosses& l) {
  // All of them in one copy to the host: on a GPU one wait, not one a value.
  std::vector<at::Tensor> parts;
  for (const at::Tensor* t : {&l.total, &l.rpn_objectness, &l.rpn_box, &l.classifier, &l.box_reg})
    parts.push_back(t->detach().to(at::kDouble).reshape({1}));
  parts.push_back(l.mask.defined() ? l.mask.detach().to(at::kDouble).reshape({1})
                                   : at::zeros({1}, parts[0].options()));
  const at::Tensor host = at::cat(parts).cpu();
  const double* v = host.data_ptr<double>();
  StepLosses r;
  r.total = v[0];
  r.objectness = v[1];
  r.rpn_box = v[2];
  r.classifier = v[3];
  r.box_reg = v[4];
  r.mask = v[5];
  return r;
}

// The first loss component that is not finite, or nullptr.
const char* nonFinite(const StepLosses& l) {
  const std::pair<const char*, double> parts[] = {{"rpn_objectness", l.objectness},
                                                  {"rpn_box", l.rpn_box},
                                                  {"fast_rcnn_class", l.classifier},
                                                  {"fast_rcnn_box", l.box_reg},
                                                  {"mask", l.mask}};
  for (const auto& [name, v] : parts)
    if (!std::isfinite(v)) return name;
  return nullptr;
}

void accumulate(StepLosses& sum, const StepLosses& add, double weight) {
  sum.total += add.total * weight;
  sum.objectness += add.objectness * weight;
  sum.rpn_box += add.rpn_box * weight;
  sum.classifier += add.classifier * weight;
  sum.box_reg += add.box_reg * weight;
  sum.mask += add.mask * weight;
}

}  // namespace

uint64_t sampleKey(uint64_t seed, uint64_t epoch, uint32_t source_index) {
  return dataset::mix64(dataset::epochKey(seed, epoch) ^ 0x73616D706C657273ull ^
                        dataset::mix64(source_index));
}

Trainer::Trainer(model::MaskRCNNImpl& net, Solver& solver, LossScaler& scaler,
                 dataset::Loader& loader, TrainerOptions options, TrainState state)
    : net_(net),
      solver_(solver),
      scaler_(scaler),
      loader_(loader),
      options_(options),
      state_(std::move(state)) {}

Trainer::~Trainer() = default;

void Trainer::run() {
  // An evaluation a hook ran (or took from the record of a resumed step) goes to every hook.
  const auto evaluated = [&] {
    if (!state_.eval) return;
    each([&](TrainHook& h) { h.afterEval(state_); });
    state_.eval.reset();
  };
  each([&](TrainHook& h) { h.beforeTrain(state_); });
  evaluated();
  // After beforeTrain: a hook may have read the loader's position. Gone at the end, before
  // the hooks' own work (the thread stops; the loader stays the caller's).
  batches_ = std::make_unique<DeviceBatches>(loader_, options_.device, options_.with_masks);
  while (state_.step < state_.total_steps && !state_.stop) {
    each([&](TrainHook& h) { h.beforeStep(state_); });
    runStep();
    ++state_.step;
    each([&](TrainHook& h) { h.afterStep(state_); });
    evaluated();
  }
  batches_.reset();
  each([&](TrainHook& h) { h.beforeEnd(state_); });
  evaluated();
  each([&](TrainHook& h) { h.afterTrain(state_); });
}

MicroBatch Trainer::forward(DeviceBatch& batch, model::MaskRCNNLosses& losses) {
  MicroBatch micro{losses, {}, batch.host.size()};
  // A data-parallel rank whose slice could not be read at all still takes part (its
  // gradients count as zeros).
  if (batch.host.size() == 0) return micro;
  model::MaskRCNNTargets& targets = batch.targets;
  for (const dataset::ImageMeta& m : batch.host.meta)
    targets.sample_keys.push_back(sampleKey(options_.seed, batch.host.epoch, m.source_index));
  {
    AutocastScope autocast(options_.amp, options_.device.type(), options_.amp_dtype);
    losses = net_.losses(batch.images, engine::batchSizes(batch.host), targets);
  }
  micro.report = reportOf(losses);
  return micro;
}

void Trainer::runStep() {
  StepLosses sum;
  uint64_t images = 0;
  state_.data_wait = 0;
  const double share = 1.0 / options_.accumulation;
  for (uint32_t micro_index = 0; micro_index < options_.accumulation; ++micro_index) {
    const auto wait_start = Clock::now();
    std::optional<DeviceBatch> batch = batches_->next();
    state_.data_wait += std::chrono::duration<double>(Clock::now() - wait_start).count();
    if (!batch) throw TrainError("training_failed", "the training data ended", engine::kExitFailed);
    each([&](TrainHook& h) { h.afterBatch(state_, batch->host); });

    model::MaskRCNNLosses losses;
    MicroBatch micro = forward(*batch, losses);
    state_.stop_requested = state_.stop_requested || StopSignal::requested();
    each([&](TrainHook& h) { h.beforeBackward(state_, micro); });
    if (const char* bad = nonFinite(micro.report)) {
      throw TrainError("nan_loss",
                       "the " + std::string(bad) + " loss is not finite at step " +
                           std::to_string(state_.step + 1) +
                           "; training stopped, the last good checkpoint is kept (lower "
                           "init_learning_rate or enable global_gradient_clip_ratio)",
                       engine::kExitFailed);
    }
    if (losses.total.defined()) {
      const at::Tensor scaled = scaler_.scaleLoss(losses.total * share);
      RECORD_USER_SCOPE("mrcnn/backward");
      scaled.backward();
    }
    accumulate(sum, micro.report, share);
    images += micro.images;
    state_.epoch = batch->host.epoch;
    state_.position = batch->host.position;
  }
  state_.losses = sum;
  state_.images = images;
  each([&](TrainHook& h) { h.afterBackward(state_); });
  const StepResult result = solver_.step(state_.lr, scaler_.enabled() ? &scaler_ : nullptr);
  if (!result.finite && !scaler_.enabled()) {
    throw TrainError("nan_loss",
                     "the gradients are not finite at step " + std::to_string(state_.step + 1) +
                         "; training stopped, the last good checkpoint is kept",
                     engine::kExitFailed);
  }
}

}  // namespace mrcnn::train
