// The data-parallel process group: PyTorch's c10d from the torch wheel, joined through a
// TCPStore rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 hosts it, or torchrun's agent), with
// Gloo on the CPU and NCCL on CUDA devices. This header names no c10d or gloo type: the
// backends are made in gloo_backend.cpp and nccl_backend.cpp, the only files that include
// their headers (gloo's come from Debian's libgloo-dev for compiling only; the gloo linked is
// the one inside libtorch_cpu, whose layout differs, so gloo types are never touched here).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dist/launch_env.h"

namespace mrcnn::dist {

// A collective that failed or did not finish in time (a rank died, hangs or disagrees). The
// message names the collective, the rank and the timeout.
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ProcessGroup {
 public:
  // Rendezvous and backend creation; throws CollectiveError naming the master's address when
  // the other ranks do not come within `timeout`.
  static std::unique_ptr<ProcessGroup> join(const LaunchEnv& env, const c10::Device& device,
                                            std::chrono::milliseconds timeout);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  const c10::Device& device() const;
  std::string backendName() const;  // "gloo" or "nccl"
  std::chrono::milliseconds timeout() const;

  // In place: every rank's tensor (contiguous, on device(), the same shape everywhere) summed.
  // One tensor a call: c10d reads a list as one tensor per device of this process.
  void allReduceSum(at::Tensor& tensor, std::string_view what);
  // In place: root's tensor on every rank.
  void broadcast(at::Tensor& tensor, int root, std::string_view what);
  // Every rank's bytes, by rank.
  std::vector<std::string> allGatherBytes(const std::string& bytes, std::string_view what);
  void barrier(std::string_view what);

  // Seconds this rank spent in the collectives above, from the call to its return: the
  // transfer and the wait for slower ranks. Host time: on NCCL, whose wait only orders the
  // GPU streams, it is the launches' alone.
  double collectiveSeconds() const;

 private:
  struct Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mrcnn::dist
