#include <ATen/ATen.h>

#include <cstring>
#include <string>

#include "engine/dist/data_parallel.h"
#include "engine/exit_codes.h"
#include "engine/train/checkpoint.h"
#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/solver.h"

namespace mrcnn::train {
namespace {

class CheckpointHook : public TrainHook {
 public:
  CheckpointHook(CheckpointStore& store, model::MaskRCNNImpl& net, const Solver& solver,
                 const LossScaler& scaler, dist::DataParallel* parallel, EventWriter& events,
                 CheckpointHookOptions options)
      : store_(store),
        net_(net),
        solver_(solver),
        scaler_(scaler),
        parallel_(parallel),
        events_(events),
        options_(options),
        saved_step_(options.saved_step) {}

  void afterStep(TrainState& s) override {
    const bool due = options_.every > 0 && s.step % options_.every == 0;
    if ((due || s.stop_requested) && saved_step_ != s.step) save(s, std::nullopt);
  }

  void afterEval(TrainState& s) override {
    last_metric_ = s.eval->bbox_ap;
    if (saved_step_ != s.step) {
      save(s, s.eval->bbox_ap);
    } else if (events_.active() && store_.reportMetric(s.step, s.eval->bbox_ap)) {
      events_.write(checkpointEvent(store_.best()->string(), s.step, true));
    }
  }

  void afterTrain(TrainState& s) override {
    if (s.status == "ok" && saved_step_ != s.step) save(s, last_metric_);
  }

 private:
  void save(const TrainState& s, std::optional<double> metric) {
    saved_step_ = s.step;
    Checkpoint c;
    c.step = s.step;
    c.epoch = s.epoch;
    c.data_position = s.position;
    c.model = net_.torchvisionState();
    for (auto& [k, v] : c.model)
      v = v.cpu();
    c.rng = captureRng();
    if (parallel_ != nullptr) {
      // The replicas must hold the same weights: a difference is a bug or a broken rank.
      if (auto differs = dist::firstDifferingTensor(c.model, parallel_->group())) {
        throw TrainError("replica_mismatch",
                         "replica check at step " + std::to_string(s.step) +
                             ": the ranks' weights differ, first in " + *differs,
                         engine::kExitFailed);
      }
      c.world_size = static_cast<uint64_t>(parallel_->size());
      const at::Tensor mine = c.rng.cpu.contiguous();
      const std::vector<std::string> all = parallel_->group().allGatherBytes(
          std::string(static_cast<const char*>(mine.data_ptr()), static_cast<size_t>(mine.numel())),
          "gather of the ranks' random generators");
      for (size_t r = 1; r < all.size(); ++r) {
        at::Tensor t = at::empty({static_cast<int64_t>(all[r].size())}, at::kByte);
        std::memcpy(t.data_ptr(), all[r].data(), all[r].size());
        c.rank_rng_cpu.push_back(t);
      }
    }
    if (!events_.active()) return;  // rank 0 writes
    c.optimizer = solver_.stateDict();
    c.loss_scaler = scaler_.stateDict();
    // A pruned model's architecture, for people and tools (the engine reads it from the
    // tensors' shapes).
    if (!net_.options().conv_widths.empty())
      c.extra_json = "{\"conv_widths\":" + model::convWidthsJson(net_.options().conv_widths) + "}";
    const std::filesystem::path path = store_.save(c, metric);
    const bool best = metric && store_.best() && store_.best()->filename() == path.filename();
    events_.write(checkpointEvent(path.string(), s.step, best));
  }

  CheckpointStore& store_;
  model::MaskRCNNImpl& net_;
  const Solver& solver_;
  const LossScaler& scaler_;
  dist::DataParallel* parallel_;
  EventWriter& events_;
  CheckpointHookOptions options_;
  std::optional<uint64_t> saved_step_;
  std::optional<double> last_metric_;
};

}  // namespace

std::unique_ptr<TrainHook> makeCheckpointHook(CheckpointStore& store, model::MaskRCNNImpl& net,
                                              const Solver& solver, const LossScaler& scaler,
                                              dist::DataParallel* parallel, EventWriter& events,
                                              CheckpointHookOptions options) {
  return std::make_unique<CheckpointHook>(store, net, solver, scaler, parallel, events, options);
}

}  // namespace mrcnn::train
