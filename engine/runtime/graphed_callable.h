// A differentiable function of fixed-shape inputs run by replaying a recording of its kernels
// (CUDA graphs): its forward and its backward are each recorded once per input shape, then
// every call copies the inputs into the recording's own buffers and replays it, and the
// backward replays the other recording and hands the parameters their gradients. The function
// must launch the same kernels whatever the inputs' values: no host synchronisation, no
// shape that depends on data, no random numbers.
//
// The recorder is the device's: CUDA graphs on a GPU (cuda_graph_recorder.cpp), or
// EagerRecorder, which runs the recorded body again at each replay: the same buffers and the
// same autograd plumbing without a GPU, for the tests.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mrcnn::runtime {

// One recording: replay() launches what the body launched when it was recorded.
class Recording {
 public:
  virtual ~Recording() = default;
  virtual void replay() = 0;
};

class GraphRecorder {
 public:
  virtual ~GraphRecorder() = default;
  // Runs `work` where recording can take place (CUDA: a side stream, ordered after what the
  // current stream has queued and before what it queues next): the warm-up runs and every
  // record() call happen inside it.
  virtual void isolated(const std::function<void()>& work) = 0;
  // Records `body` into memory of its own. `first` starts that memory (a new input shape);
  // later recordings of the same shape share it, in the order they are replayed.
  virtual std::unique_ptr<Recording> record(const std::function<void()>& body, bool first) = 0;
  // What records: "CUDA graphs" or "eager replay".
  virtual std::string name() const = 0;
  // Before recordings are dropped: waits until the device is done with them (CUDA: a device
  // synchronisation), so that their memory is not handed on while a replay still runs.
  virtual void release() {}
};

// Runs the body again at each replay; record() runs it once, as a capture runs it on the host.
class EagerRecorder : public GraphRecorder {
 public:
  void isolated(const std::function<void()>& work) override { work(); }
  std::unique_ptr<Recording> record(const std::function<void()>& body, bool first) override;
  std::string name() const override { return "eager replay"; }
};

// CUDA graphs on `device` (in a memory pool per input shape, recorded on a side stream);
// throws where this LibTorch has no CUDA.
std::unique_ptr<GraphRecorder> makeCudaGraphRecorder(const c10::Device& device);

struct GraphedCallableOptions {
  int warmup_runs = 3;     // eager forward and backward runs before the first recording
  size_t max_shapes = 4;   // input shapes recorded; a further shape runs eagerly
  // Without gradient mode (inference): record the forward alone and replay it (false: run the
  // body eagerly then, as training's evaluation does).
  bool record_without_grad = false;
};

class GraphedCallable {
 public:
  using Body = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;
  using Log = std::function<void(const std::string&)>;

  // body: the function (its outputs all floating point). trainable: the tensors requiring
  // gradients that it reads (their gradients accumulate into .grad as an eager backward's
  // would). watched: every tensor it reads besides its inputs (parameters and buffers): when
  // one of them no longer sits where it sat at recording (weights replaced, moved to another
  // layout), the recordings are dropped and made again. log (may be empty): one line at each
  // recording and at each fallback to eager runs.
  GraphedCallable(Body body, std::vector<at::Tensor> trainable, std::vector<at::Tensor> watched,
                  std::unique_ptr<GraphRecorder> recorder, Log log,
                  GraphedCallableOptions options = {});
  ~GraphedCallable();
  GraphedCallable(const GraphedCallable&) = delete;
  GraphedCallable& operator=(const GraphedCallable&) = delete;

  // The body's outputs for `inputs` (which need no gradient). Under gradient mode they carry
  // a backward to the trainable tensors. They live in the recording's buffers: the next call
  // with inputs of the same shape overwrites them, so take what is needed (and run backward)
  // first. Without gradient mode the forward alone is recorded (record_without_grad; else the
  // body runs eagerly), in recordings of its own; past the shape cap the body runs eagerly. A
  // recording that fails (the body synchronises with the host, say) is logged with its error,
  // and from then on every call runs eagerly.
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& inputs);

  size_t recordedShapes() const { return shapes_.size(); }
  uint64_t replays() const { return replays_; }
  // Calls that would have replayed but ran eagerly (past the cap, after a failed recording);
  // calls without gradients in training, which are not recorded, are not counted.
  uint64_t eagerCalls() const { return eager_calls_; }
  // One line: what is recorded, replayed, and what ran eagerly and why.
  std::string summary() const;

  struct Recorded;  // one input shape's buffers and recordings (graphed_callable.cpp)

 private:
  Recorded& recordFor(const std::vector<at::Tensor>& inputs, const std::string& key,
                      bool backward);
  void warmUpAndRecord(Recorded& r, bool backward);
  bool weightsMoved() const;

  Body body_;
  std::vector<at::Tensor> trainable_;
  std::vector<at::Tensor> watched_;
  std::vector<const void*> watched_at_;
  std::unique_ptr<GraphRecorder> recorder_;
  Log log_;
  GraphedCallableOptions options_;
  std::map<std::string, std::unique_ptr<Recorded>> shapes_;
  uint64_t replays_ = 0;
  uint64_t eager_calls_ = 0;
  uint64_t rerecorded_ = 0;
  bool failed_ = false;  // a recording failed: every call runs eagerly
  std::string eager_reason_;
};

// The shape, strides, dtype and device of each input, as the key of a recording.
std::string shapeKey(const std::vector<at::Tensor>& inputs);

}  // namespace mrcnn::runtime
