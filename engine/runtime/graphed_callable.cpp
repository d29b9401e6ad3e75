#include "engine/runtime/graphed_callable.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <torch/autograd.h>

#include <cstdint>
#include <sstream>
#include <utility>

namespace mrcnn::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

class EagerRecording : public Recording {
 public:
  explicit EagerRecording(std::function<void()> body) : body_(std::move(body)) {}
  void replay() override { body_(); }

 private:
  std::function<void()> body_;
};

// Autocast off for a backward, as the trainer's backward runs (outside its autocast scope): the
// backward is recorded inside the forward's scope.
class AutocastOff {
 public:
  AutocastOff()
      : cpu_(at::autocast::is_autocast_enabled(at::kCPU)),
        cuda_(at::autocast::is_autocast_enabled(at::kCUDA)) {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::set_autocast_enabled(at::kCUDA, false);
  }
  ~AutocastOff() {
    at::autocast::set_autocast_enabled(at::kCPU, cpu_);
    at::autocast::set_autocast_enabled(at::kCUDA, cuda_);
  }
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;

 private:
  bool cpu_, cuda_;
};

// Autocast's cache of cast weights off while recording: a cast taken from the cache would not
// be recorded, and the replays would read the weights of the step that filled it.
class AutocastCacheOff {
 public:
  AutocastCacheOff() : previous_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::clear_cache();
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(previous_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool previous_;
};

}  // namespace

std::unique_ptr<Recording> EagerRecorder::record(const std::function<void()>& body,
                                                bool /*first*/) {
  body();
  return std::make_unique<EagerRecording>(body);
}

struct GraphedCallable::Recorded {
  std::vector<at::Tensor> inputs;        // the recording reads its inputs here
  std::vector<at::Tensor> outputs;       // and writes its outputs here (the body's own)
  std::vector<size_t> differentiable;    // the outputs that carry gradients
  std::vector<at::Tensor> grad_outputs;  // their gradients, read by the backward recording
  std::vector<at::Tensor> grads;         // the trainable tensors', written by it
  std::unique_ptr<Recording> forward, backward;

  std::vector<at::Tensor> gradOutputsOf(const std::vector<at::Tensor>& outs) const {
    std::vector<at::Tensor> picked;
    for (size_t i : differentiable)
      picked.push_back(outs[i]);
    return picked;
  }
};

namespace {

class ReplayFunction : public torch::autograd::Function<ReplayFunction> {
 public:
  // trainable: as a TensorList, which autograd counts as inputs (a vector it would not).
  static variable_list forward(AutogradContext* ctx, GraphedCallable::Recorded* r,
                               at::TensorList /*trainable*/) {
    r->forward->replay();
    ctx->saved_data["recorded"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(r));
    variable_list out;
    for (const at::Tensor& o : r->outputs)
      out.push_back(o.detach());
    return out;
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_outputs) {
    auto* r = reinterpret_cast<GraphedCallable::Recorded*>(
        static_cast<intptr_t>(ctx->saved_data["recorded"].toInt()));
    for (size_t k = 0; k < r->differentiable.size(); ++k)
      r->grad_outputs[k].copy_(grad_outputs[r->differentiable[k]]);
    r->backward->replay();
    // Copies: the recording writes the same buffers at every replay, and a gradient handed
    // over as is could become a parameter's .grad and be overwritten (or added to twice).
    variable_list result{Variable()};
    for (const at::Tensor& g : r->grads)
      result.push_back(g.defined() ? g.clone() : Variable());
    return result;
  }
};

std::string describe(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

std::string shapeKey(const std::vector<at::Tensor>& inputs) {
  std::ostringstream key;
  for (const at::Tensor& t : inputs)
    key << t.sizes() << t.strides() << c10::toString(t.scalar_type()) << t.device() << ';';
  // A recording replays the casts it was made with.
  for (const c10::DeviceType d : {at::kCPU, at::kCUDA}) {
    if (at::autocast::is_autocast_enabled(d))
      key << "autocast " << d << ' ' << c10::toString(at::autocast::get_autocast_dtype(d)) << ';';
  }
  return key.str();
}

GraphedCallable::GraphedCallable(Body body, std::vector<at::Tensor> trainable,
                                 std::vector<at::Tensor> watched,
                                 std::unique_ptr<GraphRecorder> recorder, Log log,
                                 GraphedCallableOptions options)
    : body_(std::move(body)),
      trainable_(std::move(trainable)),
      watched_(std::move(watched)),
      recorder_(std::move(recorder)),
      log_(std::move(log)),
      options_(options) {
  if (!log_) log_ = [](const std::string&) {};
  for (const at::Tensor& t : trainable_)
    TORCH_CHECK(t.requires_grad(), "GraphedCallable: a trainable tensor requires no gradient");
}

GraphedCallable::~GraphedCallable() {
  if (!shapes_.empty()) recorder_->release();
}

bool GraphedCallable::weightsMoved() const {
  for (size_t i = 0; i < watched_.size(); ++i)
    if (watched_[i].data_ptr() != watched_at_[i]) return true;
  return false;
}

void GraphedCallable::warmUpAndRecord(Recorded& r, bool backward) {
  // Warm-up: libraries make their handles and workspaces, which a recording cannot.
  for (int i = 0; i < options_.warmup_runs; ++i) {
    const std::vector<at::Tensor> outs = body_(r.inputs);
    std::vector<at::Tensor> with_grad, zeros;
    for (const at::Tensor& o : outs) {
      if (!backward || !o.requires_grad()) continue;
      with_grad.push_back(o);
      zeros.push_back(at::zeros_like(o));
    }
    if (!with_grad.empty()) {
      const AutocastOff autocast_off;
      (void)torch::autograd::grad(with_grad, trainable_, zeros, false, false, true);
    }
  }
  r.forward = recorder_->record(
      [this, &r, backward] {
        // The eager replay of a training forward runs inside autograd's forward (no grad).
        const at::AutoGradMode grad(backward || at::GradMode::is_enabled());
        const AutocastCacheOff off;
        r.outputs = body_(r.inputs);
      },
      /*first=*/true);
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    TORCH_CHECK(r.outputs[i].is_floating_point(), "GraphedCallable: output ", i, " is not float");
    if (!backward || !r.outputs[i].requires_grad()) continue;
    r.differentiable.push_back(i);
    r.grad_outputs.push_back(at::zeros_like(r.outputs[i]));
  }
  if (!backward) return;
  r.backward = recorder_->record(
      [this, &r] {
        const AutocastOff autocast_off;
        r.grads = torch::autograd::grad(r.gradOutputsOf(r.outputs), trainable_, r.grad_outputs,
                                        /*retain_graph=*/false, /*create_graph=*/false,
                                        /*allow_unused=*/true);
      },
      /*first=*/false);
}

GraphedCallable::Recorded& GraphedCallable::recordFor(const std::vector<at::Tensor>& inputs,
                                                      const std::string& key, bool backward) {
  if (shapes_.empty()) {
    watched_at_.clear();
    for (const at::Tensor& t : watched_)
      watched_at_.push_back(t.data_ptr());
  }
  auto owned = std::make_unique<Recorded>();
  Recorded& r = *owned;
  for (const at::Tensor& t : inputs)
    r.inputs.push_back(t.clone());  // the same strides
  recorder_->isolated([&] {
    const AutocastCacheOff cache_off;
    // What the warm-up (and an eager recorder's recording run) changes, trainable batch norms'
    // running statistics, is put back afterwards, also when recording fails.
    std::vector<at::Tensor> kept;
    if (backward) {
      const at::NoGradGuard no_grad;
      for (const at::Tensor& t : watched_)
        kept.push_back(t.clone());
    }
    const auto restore = [&] {
      const at::NoGradGuard no_grad;
      for (size_t i = 0; i < kept.size(); ++i)
        watched_[i].copy_(kept[i]);
    };
    try {
      warmUpAndRecord(r, backward);
    } catch (...) {
      restore();
      throw;
    }
    restore();
  });
  log_(recorder_->name() + ": recorded the dense stages' " +
       (backward ? "forward and backward" : "forward") + " for inputs " +
       describe(inputs.front()) + " (" + std::to_string(r.outputs.size()) + " outputs)");
  return *shapes_.emplace(key, std::move(owned)).first->second;
}

std::vector<at::Tensor> GraphedCallable::operator()(const std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(!inputs.empty(), "GraphedCallable: no inputs");
  const bool backward = at::GradMode::is_enabled();
  if (!backward && !options_.record_without_grad) return body_(inputs);  // not for recording
  if (failed_) {
    ++eager_calls_;
    return body_(inputs);
  }
  if (!shapes_.empty() && weightsMoved()) {
    recorder_->release();
    shapes_.clear();
    ++rerecorded_;
    log_(recorder_->name() +
         ": the weights no longer sit where they were recorded (loaded, or moved to another "
         "layout): recording again");
  }
  const std::string key = (backward ? "" : "forward only;") + shapeKey(inputs);
  auto it = shapes_.find(key);
  if (it == shapes_.end() && shapes_.size() >= options_.max_shapes) {
    if (eager_reason_.empty()) {
      eager_reason_ = "inputs " + describe(inputs.front()) + " and any further shape run eagerly: " +
                      std::to_string(shapes_.size()) +
                      " shapes are recorded already (the cap; a fixed image_size gives one)";
      log_(recorder_->name() + ": " + eager_reason_);
    }
    ++eager_calls_;
    return body_(inputs);
  }
  Recorded* found = it != shapes_.end() ? it->second.get() : nullptr;
  if (!found) {
    try {
      found = &recordFor(inputs, key, backward);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      failed_ = true;
      eager_reason_ = "recording failed, every call runs eagerly: " + what.substr(0, what.find('\n'));
      log_(recorder_->name() + ": " + eager_reason_);
      ++eager_calls_;
      return body_(inputs);
    }
  }
  Recorded& r = *found;
  for (size_t i = 0; i < inputs.size(); ++i)
    r.inputs[i].copy_(inputs[i]);
  ++replays_;
  if (!backward) {
    r.forward->replay();
    return r.outputs;
  }
  return ReplayFunction::apply(&r, at::TensorList(trainable_));
}

std::string GraphedCallable::summary() const {
  std::ostringstream s;
  s << recorder_->name() << ": " << shapes_.size() << " input shape(s) recorded, " << replays_
    << " replays, " << eager_calls_ << " eager calls";
  if (rerecorded_) s << ", recorded again " << rerecorded_ << " time(s) after the weights moved";
  if (!eager_reason_.empty()) s << " (" << eager_reason_ << ")";
  return s.str();
}

}  // namespace mrcnn::runtime
