#include "engine/runtime/op_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
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

// Each CPU span's self time: its duration less that of its direct children on its thread.
// Returns the time in outermost spans.
double addSelfTimes(std::vector<Span>& spans, Totals& self) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  double outer = 0;
  std::vector<std::pair<size_t, double>> stack;  // span index, its children's time
  const auto close = [&] {
    const auto [i, children] = stack.back();
    stack.pop_back();
    const double ms = static_cast<double>(spans[i].end - spans[i].start) * 1e-6;
    auto& entry = self[spans[i].name];
    entry.first += ms - children;
    entry.second += 1;
    (stack.empty() ? outer : stack.back().second) += ms;
  };
  for (size_t i = 0; i < spans.size(); ++i) {
    while (!stack.empty() && spans[stack.back().first].end <= spans[i].start)
      close();
    stack.push_back({i, 0.0});
  }
  while (!stack.empty())
    close();
  return outer;
}

std::string table(const char* title, double total, const Totals& totals, std::size_t top) {
  std::vector<std::pair<std::string, std::pair<double, int>>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::string text;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %.1f ms\n", title, total);
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
  Totals self;
  double cpu_ms = 0;
  for (auto& [thread, spans] : cpu_by_thread)
    cpu_ms += addSelfTimes(spans, self);
  std::string text = table("profile: CPU operators by self time, in operators", cpu_ms, self, top);
  if (cuda_)
    text += table("profile: GPU kernels and copies by device time, busy", kernel_ms, kernels, top);
  return text;
}

}  // namespace mrcnn::engine
