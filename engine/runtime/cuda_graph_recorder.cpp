// GraphRecorder on CUDA graphs: the warm-up and the recordings on a side stream (a capture
// cannot run on the default stream), each input shape's recordings in a memory pool of their
// own, which the caching allocator keeps for them while they live.
#include "engine/runtime/graphed_callable.h"

#include <exception>
#include <stdexcept>

#if defined(MRCNN_TORCH_HAS_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace mrcnn::runtime {

#if defined(MRCNN_TORCH_HAS_CUDA)
namespace {

class CudaRecording : public Recording {
 public:
  at::cuda::CUDAGraph graph;
  void replay() override { graph.replay(); }
};

class CudaGraphRecorder : public GraphRecorder {
 public:
  // The side stream is taken once: the pool hands its streams out in turn, and another taker
  // (the batches' thread) must not share it while a recording runs on it.
  explicit CudaGraphRecorder(const c10::Device& device)
      : device_(device), side_(c10::cuda::getStreamFromPool(false, device.index())) {
    TORCH_CHECK(device_.is_cuda(), "CUDA graphs: the device is ", device_.str());
  }

  void isolated(const std::function<void()>& work) override {
    const c10::cuda::CUDAGuard device_guard(device_);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device_.index());
    const c10::cuda::CUDAStream side = side_;
    at::cuda::CUDAEvent queued;
    queued.record(current);
    queued.block(side);
    std::exception_ptr failed;
    {
      const c10::cuda::CUDAStreamGuard on_side(side);
      try {
        work();
      } catch (...) {
        failed = std::current_exception();
      }
    }
    // Also after a failure: what the side stream queued comes before what follows.
    at::cuda::CUDAEvent done;
    done.record(side);
    done.block(current);
    if (failed) std::rethrow_exception(failed);
  }

  std::unique_ptr<Recording> record(const std::function<void()>& body, bool first) override {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_.index());
    TORCH_CHECK(stream != c10::cuda::getDefaultCUDAStream(device_.index()),
                "CUDA graphs: record() outside isolated() (on the default stream)");
    if (first) pool_ = at::cuda::graph_pool_handle();
    auto recording = std::make_unique<CudaRecording>();
    // Thread-local: the loader's threads go on calling CUDA while the main thread records.
    recording->graph.capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
    try {
      body();
    } catch (...) {
      try {
        recording->graph.capture_end();  // ends the stream's capture; the graph is dropped
      } catch (...) {
      }
      throw;
    }
    recording->graph.capture_end();
    return recording;
  }

  std::string name() const override { return "CUDA graphs"; }

  void release() override {
    const c10::cuda::CUDAGuard device_guard(device_);
    c10::cuda::device_synchronize();
  }

 private:
  c10::Device device_;
  c10::cuda::CUDAStream side_;
  decltype(at::cuda::graph_pool_handle()) pool_{0, 0};
};

}  // namespace

std::unique_ptr<GraphRecorder> makeCudaGraphRecorder(const c10::Device& device) {
  return std::make_unique<CudaGraphRecorder>(device);
}

#else

std::unique_ptr<GraphRecorder> makeCudaGraphRecorder(const c10::Device& /*device*/) {
  throw std::runtime_error("CUDA graphs: this LibTorch was built without CUDA");
}

#endif

}  // namespace mrcnn::runtime
