// What data-parallel training does with the process group: the same initial weights on every
// rank, gradients averaged by bucketed all-reduce after backward, and the replica check (a
// checksum of every tensor compared across ranks). Batch norm statistics stay equal through
// synchronised batch norm (engine/model/sync_batch_norm.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/dist/process_group.h"
#include "engine/model/state_dict.h"

namespace mrcnn::dist {

class DataParallel {
 public:
  // `parameters`: those the solver trains; `bucket_mib`: the all-reduce's bucket size.
  DataParallel(ProcessGroup& group, std::vector<std::pair<std::string, at::Tensor>> parameters,
               double bucket_mib = 25);

  ProcessGroup& group() { return group_; }
  int rank() const { return group_.rank(); }
  int size() const { return group_.size(); }

  // Rank 0's parameters on every rank (at the start, after loading).
  void broadcastWeights();
  // Sums every parameter's gradient over the ranks and divides by the world size, in buckets
  // of about bucket_mib; a parameter without a gradient on this rank takes part as zeros.
  void averageGradients();
  // Tests only: leave gradients as they are (each rank steps on its own), to show that the
  // equivalence with one process needs the all-reduce.
  void skipAllReduce(bool skip) { skip_ = skip; }

  // One small all-reduce of doubles (the step's loss sums and counts, flags).
  std::vector<double> sum(const std::vector<double>& values, std::string_view what);
  // Seconds spent in the gradient all-reduce since the last call.
  double takeAllReduceSeconds();

 private:
  ProcessGroup& group_;
  std::vector<std::pair<std::string, at::Tensor>> parameters_;
  int64_t bucket_bytes_;
  bool skip_ = false;
  double all_reduce_seconds_ = 0;
};

// The replica check: a checksum of each tensor's bytes, compared with rank 0's. Returns the
// name of the first tensor (in `state`'s order) that differs on some rank, with those ranks,
// e.g. "backbone.fpn.inner_blocks.0.0.weight (rank 1)"; nullopt when all agree.
std::optional<std::string> firstDifferingTensor(const model::StateDict& state,
                                                ProcessGroup& group);

}  // namespace mrcnn::dist
