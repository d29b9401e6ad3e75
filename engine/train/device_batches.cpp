#include "engine/train/device_batches.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>

#include "engine/model/device_copy.h"
#include "engine/setup/data_setup.h"

#if defined(MRCNN_TORCH_HAS_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace mrcnn::train {
namespace {

struct End {};

// Every device tensor of a prepared batch.
template <typename F>
void forEachTensor(DeviceBatch& b, F&& f) {
  f(b.images);
  for (auto* list : {&b.targets.boxes, &b.targets.labels, &b.targets.masks})
    for (at::Tensor& t : *list)
      f(t);
  for (model::CroppedMasks& m : b.targets.mask_crops) {
    f(m.windows);
    f(m.offsets);
    f(m.data);
  }
}

}  // namespace

struct DeviceBatches::State {
  State(dataset::Loader& l, const c10::Device& d, bool masks) : loader(l), device(d), with_masks(masks) {}

  dataset::Loader& loader;
  c10::Device device;
  bool with_masks;
  bool threaded = false;

  std::mutex mutex;
  std::condition_variable changed;
  // Empty (monostate) while the thread prepares; then a batch, the end, or an error.
  std::variant<std::monostate, DeviceBatch, End, std::exception_ptr> slot;
  bool stop = false;
  std::thread thread;
#if defined(MRCNN_TORCH_HAS_CUDA)
  std::optional<c10::cuda::CUDAStream> side;
  at::cuda::CUDAEvent copied;  // recorded on `side` after the slot's batch was queued
#endif

  DeviceBatch prepare(dataset::Batch batch) {
    DeviceBatch b;
    b.targets = engine::batchTargets(batch, with_masks);
    model::moveToDevice(b.targets, device);
    b.images = model::copyToDevice(engine::batchImages(batch), device);
    b.host = std::move(batch);
    return b;
  }

  // One batch from the loader, prepared (on the side stream on CUDA): the slot's next value.
  std::variant<std::monostate, DeviceBatch, End, std::exception_ptr> fetch() {
    try {
      std::optional<dataset::Batch> batch = loader.next();
      if (!batch) return End{};
#if defined(MRCNN_TORCH_HAS_CUDA)
      if (side) {
        const c10::cuda::CUDAGuard on_device(device);
        const c10::cuda::CUDAStreamGuard on_side(*side);
        DeviceBatch b = prepare(std::move(*batch));
        copied.record(*side);
        return b;
      }
#endif
      return prepare(std::move(*batch));
    } catch (...) {
      return std::current_exception();
    }
  }

  void run() {
    for (;;) {
      auto value = fetch();
      const bool last = !std::holds_alternative<DeviceBatch>(value);
      std::unique_lock<std::mutex> lock(mutex);
      slot = std::move(value);
      changed.notify_all();
      if (last) return;
      changed.wait(lock, [&] { return stop || std::holds_alternative<std::monostate>(slot); });
      if (stop) return;
    }
  }

  // The slot's batch made ready for the current stream: it waits for the side stream's copy,
  // and the allocator learns the tensors are used on it too.
  void handOver(DeviceBatch& b) {
#if defined(MRCNN_TORCH_HAS_CUDA)
    if (!side) return;
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device.index());
    copied.block(current);
    forEachTensor(b, [&](at::Tensor& t) {
      if (t.defined() && t.is_cuda()) t.record_stream(current);
    });
#else
    (void)b;
#endif
  }
};

DeviceBatches::DeviceBatches(dataset::Loader& loader, const c10::Device& device, bool with_masks,
                             std::optional<bool> ahead)
    : state_(std::make_unique<State>(loader, device, with_masks)) {
  state_->threaded = ahead.value_or(device.is_cuda());
  if (!state_->threaded) return;
#if defined(MRCNN_TORCH_HAS_CUDA)
  if (device.is_cuda()) state_->side = c10::cuda::getStreamFromPool(false, device.index());
#endif
  state_->thread = std::thread([s = state_.get()] { s->run(); });
}

DeviceBatches::~DeviceBatches() {
  if (!state_->thread.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->changed.notify_all();
  state_->thread.join();
}

bool DeviceBatches::ahead() const { return state_->threaded; }

std::optional<DeviceBatch> DeviceBatches::next() {
  std::variant<std::monostate, DeviceBatch, End, std::exception_ptr> value;
  if (!state_->threaded) {
    value = state_->fetch();
  } else {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->changed.wait(lock, [&] { return !std::holds_alternative<std::monostate>(state_->slot); });
    if (auto* b = std::get_if<DeviceBatch>(&state_->slot)) {
      // Before the thread may record the next copy on the same event.
      state_->handOver(*b);
      value = std::move(state_->slot);
      state_->slot = std::monostate{};
      state_->changed.notify_all();
    } else {
      value = state_->slot;  // the end and an error stay: asked again, they answer again
    }
  }
  if (auto* error = std::get_if<std::exception_ptr>(&value)) std::rethrow_exception(*error);
  if (std::holds_alternative<End>(value)) return std::nullopt;
  DeviceBatch b = std::move(std::get<DeviceBatch>(value));
  return b;
}

}  // namespace mrcnn::train
