// Where a step's time goes: LibTorch's profiler (Kineto) over a stretch of code, summarised as
// the operators with the most CPU self time (their time less that of the operators they
// called); the operators that do the work (no operator inside them does it; views and
// allocations do none; a multi-tensor aten::_foreach_ operation counts once), which on a GPU
// are about one kernel launch each, by stage (the innermost "mrcnn/<stage>" scope,
// RECORD_USER_SCOPE, around them: the CPU's count says where a GPU's launches would come
// from); and, on a GPU, the host's kernel launches and copies by stage and the CUDA kernels
// with the most device time. Used by `--task benchmark --profile` and by bench_mask_rcnn's
// --profile.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace mrcnn::engine {

struct OpCounts {
  int work = 0;                         // operators that do the work (see above)
  std::map<std::string, int> by_stage;  // those by stage ("(no stage)" outside every scope)
  int launches = 0;                     // on a GPU: kernel launches and copies the host made
  std::map<std::string, int> launches_by_stage;
};

class OpProfile {
 public:
  // Starts profiling when `on` (CPU operators; CUDA kernels too when `cuda`); otherwise does
  // nothing at all.
  explicit OpProfile(bool on, bool cuda = false);
  // Stops a profile that stop() did not end, discarding it.
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  bool active() const { return on_; }
  // Stops profiling and returns the two tables (the `top` rows of each) as text; empty when
  // it was not on.
  std::string stop(std::size_t top = 25);
  // The counts of the profile stop() ended.
  const OpCounts& counts() const { return counts_; }

 private:
  bool on_;
  bool cuda_;
  OpCounts counts_;
};

}  // namespace mrcnn::engine
