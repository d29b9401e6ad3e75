// The training loop: data -> forward -> backward -> optimizer step, and hooks around it
// (hooks/): events and logging, the schedule, evaluation, checkpoints, early stop, the stop
// signal and data-parallel synchronisation are hooks, each in its own file. A new feature is
// a new hook, not an edit of the loop.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataset/loader/loader.h"
#include "engine/exit_codes.h"
#include "engine/model/mask_rcnn.h"

namespace mrcnn::train {

class Solver;
class LossScaler;
class DeviceBatches;
struct DeviceBatch;

// The mean loss components of a step (over the global batch in data-parallel runs).
struct StepLosses {
  double total = 0, objectness = 0, rpn_box = 0, classifier = 0, box_reg = 0, mask = 0;
};

struct EvalOutcome {
  double bbox_ap = 0;
  double segm_ap = 0;  // bbox_ap for box-only models
};

// What the loop and its hooks share.
struct TrainState {
  uint64_t step = 0;  // steps done
  uint64_t total_steps = 0;
  uint64_t first_step = 0;          // where this process started (a resume's step)
  uint64_t epoch = 0;               // where the data goes on
  uint64_t position = 0;            // (the global position in data-parallel runs)
  double lr = 0;                    // of the step being taken (the schedule hook sets it)
  StepLosses losses;                // of the last step
  uint64_t images = 0;              // of the last step, every rank's
  double data_wait = 0;             // seconds the last step waited for its batches (this rank)
  bool stop_requested = false;      // SIGINT/SIGTERM reached a rank: a graceful stop
  bool stop = false;                // a hook ends the run after this step
  std::string status = "ok";        // "stopped" after a graceful stop
  std::optional<EvalOutcome> eval;  // an evaluation made in this step, for afterEval
  std::vector<std::string> summary;  // what hooks add to the run's done summary (afterTrain)
};

// One micro-batch's losses on their way to backward.
struct MicroBatch {
  model::MaskRCNNLosses& losses;  // what backward runs on (a hook may rescale them)
  StepLosses report;              // what is reported (a hook may replace it by global means)
  uint64_t images = 0;            // in the batch (a hook may count every rank's)
};

class TrainHook {
 public:
  virtual ~TrainHook() = default;
  // Before the first step; may set state.eval (a resumed step's evaluation on record):
  // afterEval follows.
  virtual void beforeTrain(TrainState&) {}
  virtual void beforeStep(TrainState&) {}
  virtual void afterBatch(TrainState&, const dataset::Batch&) {}  // each batch read (warnings)
  virtual void beforeBackward(TrainState&, MicroBatch&) {}
  virtual void afterBackward(TrainState&) {}  // gradients complete, before the solver step
  virtual void afterStep(TrainState&) {}
  virtual void afterEval(TrainState&) {}  // state.eval holds the evaluation
  virtual void beforeEnd(TrainState&) {}  // the loop is over (may evaluate: afterEval follows)
  virtual void afterTrain(TrainState&) {}
};

// A failure that ends the run (the error event's code, its message, the exit code): the task
// harness reports it as any task's failure.
using TrainError = engine::TaskFailure;

struct TrainerOptions {
  c10::Device device{c10::kCPU};
  uint32_t accumulation = 1;  // micro-batches per step
  bool with_masks = true;
  bool amp = false;
  at::ScalarType amp_dtype = at::kBFloat16;
  uint64_t seed = 0;  // keys each sample's sampler draws (with its epoch and index)
};

class Trainer {
 public:
  Trainer(model::MaskRCNNImpl& net, Solver& solver, LossScaler& scaler, dataset::Loader& loader,
          TrainerOptions options, TrainState state);
  ~Trainer();

  void add(std::unique_ptr<TrainHook> hook) { hooks_.push_back(std::move(hook)); }
  // Runs to total_steps or until a hook stops it; throws TrainError (and whatever a hook
  // throws).
  void run();
  const TrainState& state() const { return state_; }

 private:
  void runStep();
  MicroBatch forward(DeviceBatch& batch, model::MaskRCNNLosses& losses);
  template <typename F>
  void each(F f) {
    for (auto& h : hooks_)
      f(*h);
  }

  model::MaskRCNNImpl& net_;
  Solver& solver_;
  LossScaler& scaler_;
  dataset::Loader& loader_;
  std::unique_ptr<DeviceBatches> batches_;  // from the loader, one ahead on a GPU (run())
  TrainerOptions options_;
  TrainState state_;
  std::vector<std::unique_ptr<TrainHook>> hooks_;
};

// The seed of one sample's sampler draws in one epoch: the same whichever batch or rank the
// sample is in.
uint64_t sampleKey(uint64_t seed, uint64_t epoch, uint32_t source_index);

}  // namespace mrcnn::train
