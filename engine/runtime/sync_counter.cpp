#include "engine/runtime/sync_counter.h"

#include <c10/util/Exception.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#if defined(MRCNN_TORCH_HAS_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "io/json_writer.h"

namespace mrcnn::engine {
namespace {

// What c10's sync hook warns with (c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync).
constexpr const char* kSyncWarning = "called a synchronizing CUDA operation";
constexpr int kMaxFrames = 40;
// The handler's own frame: not where the sync comes from.
constexpr int kOwnFrames = 1;

// "module+0xoffset" (the offset from the module's load address, what addr2line takes for a
// position-independent binary), with the dynamic symbol's name where there is one.
std::string frameName(uintptr_t pc) {
  Dl_info info{};
  char buf[64];
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || info.dli_fname == nullptr) {
    std::snprintf(buf, sizeof buf, "?+0x%zx", static_cast<size_t>(pc));
    return buf;
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  std::snprintf(buf, sizeof buf, "+0x%zx", static_cast<size_t>(pc - base));
  std::string name = std::filesystem::path(info.dli_fname).filename().string() + buf;
  if (info.dli_sname != nullptr) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    name += " ";
    name += status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    std::free(demangled);
  }
  return name;
}

}  // namespace

class SyncCounter::Handler : public c10::WarningHandler {
 public:
  Handler() : previous_(c10::WarningUtils::get_warning_handler()) {
#if defined(MRCNN_TORCH_HAS_CUDA)
    previous_mode_ = static_cast<int>(c10::cuda::warning_state().get_sync_debug_mode());
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
#endif
    c10::WarningUtils::set_warning_handler(this);
  }
  ~Handler() override { restore(); }
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  void process(const c10::Warning& warning) override {
    if (warning.msg() != kSyncWarning) {
      if (previous_ != nullptr) previous_->process(warning);
      return;
    }
    void* pcs[kMaxFrames];
    const int n = backtrace(pcs, kMaxFrames);
    std::vector<uintptr_t> stack;
    for (int i = std::min(kOwnFrames, n); i < n; ++i) stack.push_back(reinterpret_cast<uintptr_t>(pcs[i]));
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stacks_[stack];
    ++total_;
  }

  SyncCount finish() {
    restore();
    const std::lock_guard<std::mutex> lock(mutex_);
    SyncCount count;
    count.total = total_;
    for (const auto& [stack, n] : stacks_) {
      SyncSite site;
      site.count = n;
      for (const uintptr_t pc : stack) site.frames.push_back(frameName(pc));
      count.sites.push_back(std::move(site));
    }
    std::stable_sort(count.sites.begin(), count.sites.end(),
                     [](const SyncSite& a, const SyncSite& b) { return a.count > b.count; });
    return count;
  }

 private:
  void restore() {
    if (restored_) return;
    restored_ = true;
#if defined(MRCNN_TORCH_HAS_CUDA)
    c10::cuda::warning_state().set_sync_debug_mode(static_cast<c10::cuda::SyncDebugMode>(previous_mode_));
#endif
    c10::WarningUtils::set_warning_handler(previous_);
  }

  c10::WarningHandler* previous_;
  int previous_mode_ = 0;
  bool restored_ = false;
  std::mutex mutex_;
  std::map<std::vector<uintptr_t>, size_t> stacks_;
  size_t total_ = 0;
};

bool SyncCounter::available() {
#if defined(MRCNN_TORCH_HAS_CUDA)
  return true;
#else
  return false;
#endif
}

SyncCounter::SyncCounter(bool on) {
  if (on && available()) handler_ = std::make_unique<Handler>();
}

SyncCounter::~SyncCounter() = default;

bool SyncCounter::active() const { return handler_ != nullptr; }

SyncCount SyncCounter::stop() {
  if (!handler_) return {};
  SyncCount count = handler_->finish();
  handler_.reset();
  return count;
}

std::string SyncCount::json() const {
  std::ostringstream out;
  {
    io::JsonWriter w(out);
    w.beginObject().key("total").value(total).key("sites").beginArray();
    for (const SyncSite& site : sites) {
      w.beginObject().key("count").value(site.count).key("frames").beginArray();
      for (const std::string& frame : site.frames) w.value(frame);
      w.endArray().endObject();
    }
    w.endArray().endObject();
  }
  return out.str();
}

}  // namespace mrcnn::engine
