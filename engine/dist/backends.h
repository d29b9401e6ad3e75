// The c10d backends, each made in a file of its own (the only ones that include their
// headers). Internal to engine/dist.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace mrcnn::dist {

// Gloo over TCP. `host`: the address this rank's gloo listens on; empty: the machine's
// hostname's address (several machines); GLOO_SOCKET_IFNAME, when set, names an interface.
c10::intrusive_ptr<c10d::Backend> makeGlooBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout,
                                                  const std::string& host);

// NCCL on the current CUDA device; throws when this LibTorch has no CUDA.
c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout);

}  // namespace mrcnn::dist
