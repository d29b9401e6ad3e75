// Where a step's time goes: LibTorch's profiler (Kineto) over a stretch of code, summarised as
// the operators with the most CPU self time (their time less that of the operators they
// called) and, on a GPU, the CUDA kernels with the most device time. Used by
// `--task benchmark --profile` and by bench_mask_rcnn's --profile.
#pragma once

#include <cstddef>
#include <string>

namespace mrcnn::engine {

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

 private:
  bool on_;
  bool cuda_;
};

}  // namespace mrcnn::engine
