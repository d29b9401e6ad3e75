#include "engine/dist/process_group.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>

#include "engine/dist/backends.h"

namespace mrcnn::dist {
namespace {

// Adds the seconds of its scope to `total`.
class Timed {
 public:
  explicit Timed(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

// Each rank counts up a key of its own in the rendezvous store once a second, from a thread
// and a store connection of its own: a rank that stops (SIGSTOP, a hung host, a dead process)
// stops counting, so when a collective fails the rank that stopped answering can be named
// (the collective's own error names only the rank that waited).
class Heartbeat {
 public:
  static constexpr std::chrono::milliseconds kInterval{1000};
  static constexpr std::chrono::milliseconds kStoreTimeout{3000};

  Heartbeat(const LaunchEnv& env, int size) : rank_(env.rank), size_(size) {
    c10d::TCPStoreOptions o;
    o.port = env.master_port;
    o.isServer = false;
    o.waitWorkers = false;
    o.timeout = kStoreTimeout;
    store_ = c10::make_intrusive<c10d::PrefixStore>(
        "mrcnn-workbench/heartbeat/", c10::make_intrusive<c10d::TCPStore>(env.master_addr, o));
    thread_ = std::thread([this] { beat(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // The other ranks whose count did not move over `window`; with the store not answering
  // (it lives in rank 0's process), rank 0. Empty: every rank is alive.
  std::vector<int> stalled(std::chrono::milliseconds window) {
    std::vector<int64_t> before(static_cast<size_t>(size_), -1);
    try {
      for (int r = 0; r < size_; ++r)
        if (r != rank_) before[static_cast<size_t>(r)] = count(r);
      std::this_thread::sleep_for(window);
      std::vector<int> out;
      for (int r = 0; r < size_; ++r)
        if (r != rank_ && count(r) == before[static_cast<size_t>(r)]) out.push_back(r);
      return out;
    } catch (const std::exception&) {
      return {0};
    }
  }

 private:
  int64_t count(int rank) {
    std::lock_guard lock(store_mutex_);
    return store_->add("rank-" + std::to_string(rank), 0);
  }
  void beat() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      try {
        std::lock_guard store_lock(store_mutex_);
        store_->add("rank-" + std::to_string(rank_), 1);
      } catch (const std::exception&) {
        // The store is gone or slow: the next beat tries again.
      }
      lock.lock();
      wake_.wait_for(lock, kInterval, [this] { return stop_; });
    }
  }

  int rank_, size_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::mutex store_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  int rank = 0;
  int size = 1;
  c10::Device device{c10::kCPU};
  std::string name;
  std::chrono::milliseconds timeout{0};
  double collective_seconds = 0;
  std::unique_ptr<Heartbeat> heartbeat;  // null when it could not connect

  // Waits for `work`; any failure becomes a CollectiveError naming the collective.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, std::string_view what) const {
    try {
      work->wait(timeout);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
      // Who stopped answering: the ranks whose heartbeat stands still (a few seconds more).
      std::string who;
      if (heartbeat) {
        const std::vector<int> stalled = heartbeat->stalled(3 * Heartbeat::kInterval);
        if (stalled.size() == 1) {
          who = "rank " + rankList(stalled) + " stopped answering (its heartbeat stands still); ";
        } else if (!stalled.empty()) {
          who = "ranks " + rankList(stalled) + " stopped answering (their heartbeats stand still); ";
        }
      }
      throw CollectiveError("rank " + std::to_string(rank) + " of " + std::to_string(size) +
                            ": " + who + "the " + name + " collective \"" + std::string(what) +
                            "\" failed (another rank died, or it waited past the timeout of " +
                            std::to_string(timeout.count() / 1000) + " s): " + why);
    }
  }
};

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

std::unique_ptr<ProcessGroup> ProcessGroup::join(const LaunchEnv& env, const c10::Device& device,
                                                 std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  impl->rank = env.rank;
  impl->size = env.world_size;
  impl->device = device;
  impl->timeout = timeout;
  impl->name = device.is_cuda() ? "nccl" : "gloo";
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = env.master_port;
    store_options.isServer = env.rank == 0 && !env.agent_store;
    store_options.numWorkers = static_cast<size_t>(env.world_size);
    store_options.waitWorkers = false;
    store_options.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
    // Our keys apart from those of torchrun's agent, which shares its store.
    impl->store = c10::make_intrusive<c10d::PrefixStore>("mrcnn-workbench/", tcp);
    if (device.is_cuda()) {
      impl->backend = makeNcclBackend(impl->store, env.rank, env.world_size, timeout);
    } else {
      const bool loopback = env.master_addr.starts_with("127.");
      impl->backend = makeGlooBackend(impl->store, env.rank, env.world_size, timeout,
                                      loopback ? env.master_addr : std::string());
    }
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    throw CollectiveError("rank " + std::to_string(env.rank) + " of " +
                          std::to_string(env.world_size) + ": cannot join the process group at " +
                          where + " (" + impl->name + ", launcher " + env.launcher +
                          "; the other ranks must start within " +
                          std::to_string(timeout.count() / 1000) + " s): " + why);
  }
  try {
    impl->heartbeat = std::make_unique<Heartbeat>(env, env.world_size);
  } catch (const std::exception&) {
    // Without it a failed collective names only the rank that waited.
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

int ProcessGroup::rank() const {
  return impl_->rank;
}
int ProcessGroup::size() const {
  return impl_->size;
}
const c10::Device& ProcessGroup::device() const {
  return impl_->device;
}
std::string ProcessGroup::backendName() const {
  return impl_->name;
}
std::chrono::milliseconds ProcessGroup::timeout() const {
  return impl_->timeout;
}
double ProcessGroup::collectiveSeconds() const {
  return impl_->collective_seconds;
}

void ProcessGroup::allReduceSum(at::Tensor& tensor, std::string_view what) {
  const Timed timed(impl_->collective_seconds);
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.timeout = impl_->timeout;
  impl_->wait(impl_->backend->allreduce(tensors, options), what);
}

void ProcessGroup::broadcast(at::Tensor& tensor, int root, std::string_view what) {
  const Timed timed(impl_->collective_seconds);
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  options.timeout = impl_->timeout;
  impl_->wait(impl_->backend->broadcast(tensors, options), what);
}

std::vector<std::string> ProcessGroup::allGatherBytes(const std::string& bytes,
                                                      std::string_view what) {
  const Timed timed(impl_->collective_seconds);
  const auto on_device = at::TensorOptions().device(impl_->device);
  const auto n = static_cast<size_t>(impl_->size);
  // Sizes first, then every rank's bytes padded to the longest.
  std::vector<at::Tensor> size_in{
      at::full({1}, static_cast<int64_t>(bytes.size()), on_device.dtype(at::kLong))};
  std::vector<std::vector<at::Tensor>> size_out(1);
  for (size_t r = 0; r < n; ++r)
    size_out[0].push_back(at::empty({1}, on_device.dtype(at::kLong)));
  impl_->wait(impl_->backend->allgather(size_out, size_in), what);
  std::vector<int64_t> sizes;
  int64_t longest = 1;
  for (const at::Tensor& t : size_out[0]) {
    sizes.push_back(t.cpu().item<int64_t>());
    longest = std::max(longest, sizes.back());
  }
  at::Tensor mine = at::zeros({longest}, at::TensorOptions().dtype(at::kByte));
  if (!bytes.empty()) std::memcpy(mine.data_ptr(), bytes.data(), bytes.size());
  std::vector<at::Tensor> data_in{mine.to(impl_->device)};
  std::vector<std::vector<at::Tensor>> data_out(1);
  for (size_t r = 0; r < n; ++r)
    data_out[0].push_back(at::empty({longest}, on_device.dtype(at::kByte)));
  impl_->wait(impl_->backend->allgather(data_out, data_in), what);
  std::vector<std::string> out;
  for (size_t r = 0; r < n; ++r) {
    const at::Tensor t = data_out[0][r].cpu();
    out.emplace_back(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(sizes[r]));
  }
  return out;
}

void ProcessGroup::barrier(std::string_view what) {
  // A one-element all-reduce: Gloo's and NCCL's barriers differ in what they wait for.
  at::Tensor token = at::zeros({1}, at::TensorOptions().device(impl_->device));
  allReduceSum(token, what);
}

}  // namespace mrcnn::dist
