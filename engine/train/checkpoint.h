// Training checkpoints: <run dir>/checkpoints/model.step-N.pt, each a file of Python's
// torch.save format (engine/model/state_dict.h) holding one flat dict of tensors, so that
// `torch.load(path, weights_only=True)` reads it:
//
//   model.<name>                      the model's state_dict
//   optimizer.momentum_buffer.<name>  the solver's state (Solver::stateDict)
//   optimizer.steps_taken
//   loss_scaler.scale / .growth_tracker / .skipped_steps
//   trainer.step, trainer.epoch, trainer.data_position   int64 scalars: where training goes on
//   trainer.format_version                               int64 scalar: 1
//   trainer.world_size                int64 scalar: ranks that trained it (absent: 1)
//   rng.cpu                           the CPU generator's state (uint8)
//   rng.cuda.<i>                      each CUDA device's generator state, when present
//   rng.rank.<r>.cpu                  rank r's CPU generator (data-parallel runs, r >= 1)
//   meta.json                         uint8 bytes of a JSON object:
//       {"format":"mrcnn-workbench checkpoint","version":1,"step":N,"epoch":E,
//        "data_position":P,"time":<unix s>,"extra":<the engine's JSON>}
//     (in Python: bytes(ckpt["meta.json"].numpy()).decode()). The scalars above are the truth
//     the engine resumes from; meta.json is for people and tools.
//
// Writing is atomic and durable: a temporary file in the same folder, fsync, rename, fsync of
// the folder; then the `last` pointer (a one-line text file naming the checkpoint) the same
// way. A process killed at any moment leaves the previous checkpoint and pointers valid.
// Retention keeps the last keep_last checkpoints plus the best one by the reported metric;
// `best` names it, with the metric on a second line.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/state_dict.h"

namespace mrcnn::train {

// A checkpoint that cannot be used: the message names the file and what is wrong with it.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The random generators' states.
struct RngState {
  at::Tensor cpu;                // uint8
  std::vector<at::Tensor> cuda;  // one per device; empty without CUDA
};
RngState captureRng();
// Throws CheckpointError when the state does not fit this machine (a different CUDA device
// count is accepted: the devices both have are restored).
void restoreRng(const RngState& state);

struct Checkpoint {
  uint64_t step = 0;   // steps done
  uint64_t epoch = 0;  // the data loader's epoch and position to continue from
  uint64_t data_position = 0;
  model::StateDict model;        // names without the "model." prefix
  model::StateDict optimizer;    // without "optimizer."
  model::StateDict loss_scaler;  // without "loss_scaler."
  RngState rng;
  // Data-parallel runs: the world size that wrote it (data_position is then the global
  // position, a multiple of the global batch) and the CPU generator of every other rank
  // (rng.rank.<r>.cpu), so that a resume with the same world size restores each rank's.
  uint64_t world_size = 1;
  std::vector<at::Tensor> rank_rng_cpu;  // ranks 1..world_size-1
  std::string extra_json = "{}";  // a JSON value the engine wants kept (spec digest, ...)
};

// "model.step-N.pt" → N; nullopt for any other name.
std::optional<uint64_t> checkpointStepOf(std::string_view file_name);
std::string checkpointFileName(uint64_t step);

// Writes `checkpoint` to `file` atomically (see above). Throws CheckpointError naming the file
// and the system's reason (a full disk...); the previous file, if any, is then untouched.
void writeCheckpoint(const Checkpoint& checkpoint, const std::filesystem::path& file);
// Reads a checkpoint. Throws CheckpointError naming the file: missing, truncated or corrupt
// (not a complete torch.save zip), foreign (a state_dict without our meta.json, e.g. weights
// to give as the spec's `checkpoint`), or of a newer format version.
Checkpoint readCheckpoint(const std::filesystem::path& file);

struct CheckpointStoreOptions {
  uint32_t keep_last = 5;        // keep_checkpoint_max; at least 1
  bool higher_is_better = true;  // mAP
  // Tests only: called at each stage of a save ("temporary written", "checkpoint renamed",
  // "last written") to simulate a crash there.
  std::function<void(std::string_view stage)> fault_injection;
};

class CheckpointStore {
 public:
  // `dir` is <run dir>/checkpoints (created if missing). Reads the pointers; removes
  // temporary files a killed save left behind.
  CheckpointStore(std::filesystem::path dir, CheckpointStoreOptions options = {});

  // Writes model.step-N.pt, points `last` at it, and, when `metric` is given, records it as
  // for reportMetric. Then removes checkpoints beyond the last keep_last, never the best.
  // Returns the file's path.
  std::filesystem::path save(const Checkpoint& checkpoint, std::optional<double> metric = {});

  // An evaluation's metric for the checkpoint of `step`: when it beats the best so far (or
  // there is none) and that checkpoint exists, `best` points at it. Returns whether it did.
  bool reportMetric(uint64_t step, double metric);
  // Whether `metric` would become the best.
  bool isBetter(double metric) const;

  // The checkpoint `last` names (nullopt when there is none). Throws CheckpointError when the
  // pointer names a file that does not exist.
  std::optional<std::filesystem::path> last() const;
  std::optional<std::filesystem::path> best() const;
  std::optional<double> bestMetric() const { return best_metric_; }
  // Steps of the checkpoint files present, ascending.
  std::vector<uint64_t> steps() const;

  // The checkpoint to resume from: `last`, or without a pointer the highest step present;
  // nullopt when the folder has none. Errors as readCheckpoint.
  std::optional<Checkpoint> loadLatest() const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  void writePointer(const std::string& name, const std::string& contents);
  void prune();
  void fault(std::string_view stage) const;

  std::filesystem::path dir_;
  CheckpointStoreOptions options_;
  std::optional<uint64_t> best_step_;
  std::optional<double> best_metric_;
};

}  // namespace mrcnn::train
