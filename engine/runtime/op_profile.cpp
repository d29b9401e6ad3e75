#include "engine/runtime/op_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace mrcnn::engine {
namespace {

namespace prof = torch::autograd::profiler;
using Totals = std::map<std::string, std::pair<double, int>>;  // name -> ms, calls

struct Span {
  uint64_t start, end;
  std::string name;
};

// Operators that only describe or allocate memory: no kernel runs for them on a GPU.
const std::set<std::string> kNoWork = {
    "aten::empty",         "aten::empty_strided", "aten::empty_like",   "aten::view",
    "aten::as_strided",    "aten::_reshape_alias", "aten::reshape",     "aten::detach",
    "aten::detach_",       "aten::t",              "aten::transpose",   "aten::permute",
    "aten::expand",        "aten::expand_as",      "aten::squeeze",     "aten::unsqueeze",
    "aten::select",        "aten::slice",          "aten::narrow",      "aten::alias",
    "aten::resize_",       "aten::set_",           "aten::lift_fresh",  "aten::_unsafe_view",
    "aten::unbind",        "aten::split",          "aten::split_with_sizes", "aten::chunk",
    "aten::numel",         "aten::size",           "aten::stride",      "aten::result_type",
    "aten::contiguous",    "aten::to",             "aten::flatten",     "aten::view_as",
    "aten::unflatten",     "aten::movedim",        "aten::requires_grad_", "aten::type_as",
    "aten::_has_compatible_shallow_copy_type",     "aten::is_nonzero",  "aten::record_stream",
    "aten::as_strided_",   "aten::resolve_conj",   "aten::resolve_neg", "aten::_conj",
    "aten::_neg_view",     "aten::squeeze_",       "aten::unsqueeze_"};

// Where a span's work belongs: the innermost "mrcnn/..." scope around it (RECORD_USER_SCOPE in
// the model, the solver and the step), else "backward" inside autograd's functions on a thread
// of their own (a GPU's backward), else "(no stage)".
std::string stageOf(const std::string& name, const std::string& outer) {
  if (name.compare(0, 6, "mrcnn/") == 0) return name.substr(6);
  if (outer.empty() && name.compare(0, 8, "autograd") == 0) return "backward";
  return outer;
}

// A CUDA runtime or driver call that the profiler records inside an operator
// (cudaLaunchKernel, cudaMemcpyAsync, cuLaunchKernel, cudaGraphLaunch, ...).
bool isRuntimeCall(const std::string& name) {
  return name.compare(0, 4, "cuda") == 0 ||
         (name.size() > 2 && name.compare(0, 2, "cu") == 0 &&
          std::isupper(static_cast<unsigned char>(name[2])) != 0);
}

bool isLaunch(const std::string& name) {
  return isRuntimeCall(name) && (name.find("Launch") != std::string::npos ||
                                 name.find("Memcpy") != std::string::npos ||
                                 name.find("Memset") != std::string::npos);
}

bool isForeach(const std::string& name) {
  return name.compare(0, 15, "aten::_foreach_") == 0;
}

bool doesWork(const std::string& name) {
  return (name.compare(0, 6, "aten::") == 0 || name.compare(0, 7, "mrcnn::") == 0 ||
          name.compare(0, 6, "c10d::") == 0) &&
         kNoWork.count(name) == 0;
}

struct Walk {
  Totals self;      // name -> self ms, calls
  // Operators that do work with no such operator inside them (an operator that only allocates
  // before its kernel counts; one that calls other operators for its work does not): name ->
  // ms, calls, by "stage  name".
  Totals leaves;
  Totals stages;    // stage -> ms of its leaves, leaf calls
  Totals launches;  // on a GPU: stage -> ms of its kernel launches and copies, their count
  double outer = 0;  // time in outermost spans
};

// One thread's spans: each span's self time (its duration less that of its direct children),
// and the operators that ran no other operator, by name and by stage.
void walk(std::vector<Span>& spans, Walk& w) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  struct Open {
    size_t index;
    double children_ms = 0;
    bool counted_below = false;  // an operator inside it was counted as doing the work
    // Inside a multi-tensor operation (aten::_foreach_*), counted once as a whole: on a GPU
    // it is one kernel for up to ~100 tensors; on the CPU LibTorch runs it tensor by tensor.
    bool in_foreach = false;
    std::string stage;
  };
  std::vector<Open> stack;
  const auto close = [&] {
    const Open open = std::move(stack.back());
    stack.pop_back();
    const Span& span = spans[open.index];
    const double ms = static_cast<double>(span.end - span.start) * 1e-6;
    auto& entry = w.self[span.name];
    entry.first += ms - open.children_ms;
    entry.second += 1;
    const std::string& stage_name = open.stage.empty() ? "(no stage)" : open.stage;
    if (isLaunch(span.name)) {
      auto& launch = w.launches[stage_name];
      launch.first += ms;
      launch.second += 1;
    }
    const bool foreach_itself = isForeach(span.name) && (stack.empty() || !stack.back().in_foreach);
    const bool counted = foreach_itself || (!open.in_foreach && !open.counted_below &&
                                            doesWork(span.name));
    if (counted) {
      auto& leaf = w.leaves[stage_name + "  " + span.name];
      leaf.first += ms;
      leaf.second += 1;
      auto& stage = w.stages[stage_name];
      stage.first += ms;
      stage.second += 1;
    }
    if (stack.empty()) {
      w.outer += ms;
    } else {
      stack.back().children_ms += ms;
      if (counted || open.counted_below) stack.back().counted_below = true;
    }
  };
  for (size_t i = 0; i < spans.size(); ++i) {
    while (!stack.empty() && spans[stack.back().index].end <= spans[i].start)
      close();
    const std::string outer = stack.empty() ? std::string() : stack.back().stage;
    const bool in_foreach =
        isForeach(spans[i].name) || (!stack.empty() && stack.back().in_foreach);
    stack.push_back({i, 0.0, false, in_foreach, stageOf(spans[i].name, outer)});
  }
  while (!stack.empty())
    close();
}

int calls(const Totals& totals) {
  int n = 0;
  for (const auto& [name, entry] : totals)
    n += entry.second;
  return n;
}

// The `top` rows of totals, the busiest first (by_calls: the most called first).
std::string table(const std::string& title, const Totals& totals, std::size_t top,
                  bool by_calls = false) {
  std::vector<std::pair<std::string, std::pair<double, int>>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [by_calls](const auto& a, const auto& b) {
    return by_calls ? a.second.second > b.second.second : a.second.first > b.second.first;
  });
  std::string text;
  char line[512];
  std::snprintf(line, sizeof line, "%s\n", title.c_str());
  text += line;
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    std::snprintf(line, sizeof line, "  %9.2f ms %6d  %.200s\n", rows[i].second.first,
                  rows[i].second.second, rows[i].first.c_str());
    text += line;
  }
  return text;
}

}  // namespace

OpProfile::OpProfile(bool on, bool cuda) : on_(on), cuda_(cuda) {
  if (!on_) return;
  std::set<torch::profiler::impl::ActivityType> activities{
      torch::profiler::impl::ActivityType::CPU};
  if (cuda_) activities.insert(torch::profiler::impl::ActivityType::CUDA);
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
}

OpProfile::~OpProfile() {
  if (on_) (void)prof::disableProfiler();
}

std::string OpProfile::stop(std::size_t top) {
  if (!on_) return {};
  on_ = false;
  const auto result = prof::disableProfiler();
  std::map<uint64_t, std::vector<Span>> cpu_by_thread;
  Totals kernels;
  double kernel_ms = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() == c10::DeviceType::CUDA) {
      const double ms = static_cast<double>(e.durationNs()) * 1e-6;
      auto& entry = kernels[e.name()];
      entry.first += ms;
      entry.second += 1;
      kernel_ms += ms;
    } else {
      cpu_by_thread[e.startThreadId()].push_back({e.startNs(), e.endNs(), e.name()});
    }
  }
  Walk w;
  for (auto& [thread, spans] : cpu_by_thread)
    walk(spans, w);
  char title[256];
  std::snprintf(title, sizeof title, "profile: CPU operators by self time, in operators: %.1f ms",
                w.outer);
  std::string text = table(title, w.self, top);
  counts_ = OpCounts{};
  counts_.work = calls(w.leaves);
  for (const auto& [stage, entry] : w.stages)
    counts_.by_stage[stage] = entry.second;
  counts_.launches = calls(w.launches);
  for (const auto& [stage, entry] : w.launches)
    counts_.launches_by_stage[stage] = entry.second;
  // Each operator that runs no other operator and does work is about one kernel launch on a
  // GPU: their count says how many launches the step would make, and which stage makes them.
  std::snprintf(title, sizeof title,
                "profile: operators that do the work, none inside them doing it (about one kernel "
                "launch each on a GPU): %d, by stage",
                calls(w.leaves));
  text += table(title, w.stages, top, /*by_calls=*/true);
  text += table("profile: those operators by stage and name, by calls", w.leaves, 3 * top,
                /*by_calls=*/true);
  if (cuda_) {
    std::snprintf(title, sizeof title,
                  "profile: kernel launches and copies the host made: %d, by stage (ms: the "
                  "host's time in the calls)",
                  calls(w.launches));
    text += table(title, w.launches, top, /*by_calls=*/true);
    std::snprintf(title, sizeof title,
                  "profile: GPU kernels and copies by device time, busy: %.1f ms, %d kernels "
                  "and copies",
                  kernel_ms, calls(kernels));
    text += table(title, kernels, top);
  }
  return text;
}

}  // namespace mrcnn::engine
