// The training loop's hooks (engine/train/trainer.h), one file each. The train task
// (engine/tasks/train_task.cpp) assembles them in this order:
//   dense graphs -> schedule -> data parallel -> events -> evaluation -> early stop -> checkpoints -> stop
//   -> overlays
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/runtime/dense_graphs.h"
#include "engine/train/trainer.h"

namespace mrcnn::dist {
class DataParallel;
class ProcessGroup;
}  // namespace mrcnn::dist
namespace mrcnn::dataset {
class CocoDataset;
}
namespace mrcnn::engine {
class Validator;
}

namespace mrcnn::train {

class CheckpointStore;
class EventWriter;
class LrSchedule;
class RunDir;

// CUDA graphs for the dense stages (runtime/dense_graphs.h): installed before the first step, the
// status logged; at the end their counts in the run's summary and their memory given back.
std::unique_ptr<TrainHook> makeDenseGraphsHook(model::MaskRCNNImpl& net,
                                               runtime::DenseGraphsRequest request,
                                               EventWriter& events);

// The learning rate of each step (lr_schedule.h).
std::unique_ptr<TrainHook> makeScheduleHook(const LrSchedule& schedule);

// Data-parallel synchronisation: rank 0's weights broadcast at the start; each micro-batch's loss
// components normalised over the global batch (their denominators all-reduced, so that N ranks x b
// train as 1 x N.b) and reported as global means; a stop request on any rank seen by all; gradients
// averaged after backward.
struct LossWeights {  // the model's weights of rpn_box, box_reg and mask in the total
  double rpn_box = 1, box_reg = 1, mask = 1;
};
std::unique_ptr<TrainHook> makeDataParallelHook(dist::DataParallel& parallel, EventWriter& events,
                                                LossWeights weights);

// At the end of a data-parallel run on Gloo, each rank's time a step: forward and backward,
// waiting for data, in collectives (the transfer and the wait for slower ranks), and which
// rank the others wait for. Added after the data-parallel hook (its window ends after the
// gradients' all-reduce).
std::unique_ptr<TrainHook> makeRankBalanceHook(dist::ProcessGroup& group, EventWriter& events);

// Progress events every `every` steps (global images/s, ETA, memory), loader warnings.
std::unique_ptr<TrainHook> makeEventsHook(EventWriter& events, uint32_t every,
                                          const LossScaler& scaler);

// Evaluation every `every` steps (0: only at the end) and at the end, sharded over the ranks
// of `group` (null: one process); rank 0 writes eval/step-N.json and the eval event.
std::unique_ptr<TrainHook> makeEvalHook(const engine::Validator& validator,
                                        model::MaskRCNNImpl& net, c10::Device device,
                                        dist::DataParallel* parallel, const RunDir& run_dir,
                                        EventWriter& events, uint64_t every);

// Stops once both target mAPs are reached (targets <= 0: never).
std::unique_ptr<TrainHook> makeEarlyStopHook(EventWriter& events, double target_bbox,
                                             double target_segm);

struct CheckpointHookOptions {
  uint64_t every = 0;                  // save_checkpoints_steps; 0: only at the end (and on stop)
  std::optional<uint64_t> saved_step;  // the step of the checkpoint resumed from
};
// Checkpoints on schedule, after each evaluation (with its metric, for `best`), on a
// graceful stop and at the end; with data-parallel ranks, first the replica check (an error
// naming the first tensor that differs) and every rank's generator gathered; rank 0 writes.
std::unique_ptr<TrainHook> makeCheckpointHook(CheckpointStore& store, model::MaskRCNNImpl& net,
                                              const Solver& solver, const LossScaler& scaler,
                                              dist::DataParallel* parallel, EventWriter& events,
                                              CheckpointHookOptions options);

// A graceful stop (SIGINT/SIGTERM) ends the run after the step, status "stopped".
std::unique_ptr<TrainHook> makeStopHook();

// Draws the validation images' overlays with the final weights into `dir`; returns an empty
// string when done, else why not.
using DrawOverlays = std::function<std::string()>;
// After a run that ended "ok": the overlays of the validation images with the final weights
// (added after the checkpoint hook, whose final checkpoint they are drawn with). A finished run
// trained again draws nothing: its weights are those the overlays in `dir` were drawn with.
std::unique_ptr<TrainHook> makeOverlaysHook(EventWriter& events, const std::filesystem::path& dir,
                                            DrawOverlays draw);

}  // namespace mrcnn::train
