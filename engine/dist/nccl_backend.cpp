// NCCL: compiled where LibTorch has CUDA (MRCNN_TORCH_HAS_CUDA), else a clear refusal.
#include "engine/dist/backends.h"

#include <stdexcept>

#if defined(MRCNN_TORCH_HAS_CUDA)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace mrcnn::dist {

c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout) {
#if defined(MRCNN_TORCH_HAS_CUDA)
  auto options = c10d::ProcessGroupNCCL::Options::create();
  // A collective that does not finish in `timeout` is aborted by c10d's watchdog, which ends
  // the process; the launcher then reports the rank and ends the others.
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#else
  (void)store;
  (void)rank;
  (void)size;
  (void)timeout;
  throw std::runtime_error("NCCL: this LibTorch was built without CUDA");
#endif
}

}  // namespace mrcnn::dist
