#include "engine/dist/data_parallel.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cstring>
#include <map>

namespace mrcnn::dist {
namespace {

using Clock = std::chrono::steady_clock;

// Tensors flattened into one buffer per collective (c10d takes one tensor a call), grouped
// by dtype and cut at `bucket_bytes`.
template <typename Get, typename Put>
void inBuckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes, Get get, Put put) {
  std::map<at::ScalarType, std::vector<size_t>> by_type;
  for (size_t i = 0; i < tensors.size(); ++i) by_type[tensors[i].scalar_type()].push_back(i);
  for (const auto& [type, indices] : by_type) {
    size_t begin = 0;
    while (begin < indices.size()) {
      size_t end = begin;
      int64_t bytes = 0;
      while (end < indices.size() && (end == begin || bytes < bucket_bytes)) {
        bytes += tensors[indices[end]].numel() * tensors[indices[end]].element_size();
        ++end;
      }
      std::vector<at::Tensor> parts;
      for (size_t k = begin; k < end; ++k) parts.push_back(get(indices[k]).reshape({-1}));
      at::Tensor flat = at::cat(parts);
      put(flat);
      int64_t offset = 0;
      for (size_t k = begin; k < end; ++k) {
        at::Tensor target = get(indices[k]);
        const int64_t n = target.numel();
        target.copy_(flat.narrow(0, offset, n).view(target.sizes()));
        offset += n;
      }
      begin = end;
    }
  }
}

// FNV-1a over a tensor's bytes (on the CPU, contiguous).
uint64_t checksum(const at::Tensor& t) {
  const at::Tensor c = t.detach().cpu().contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

DataParallel::DataParallel(ProcessGroup& group,
                           std::vector<std::pair<std::string, at::Tensor>> parameters,
                           double bucket_mib)
    : group_(group),
      parameters_(std::move(parameters)),
      bucket_bytes_(static_cast<int64_t>(bucket_mib * 1024 * 1024)) {}

void DataParallel::broadcastWeights() {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> all;
  for (auto& [name, t] : parameters_) all.push_back(t);
  inBuckets(
      all, bucket_bytes_, [&](size_t i) { return all[i].detach(); },
      [&](at::Tensor& flat) { group_.broadcast(flat, 0, "broadcast of rank 0's weights"); });
}

void DataParallel::averageGradients() {
  if (skip_) return;
  const auto started = Clock::now();
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> params;
  for (auto& [name, p] : parameters_) {
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    params.push_back(p);
  }
  const double inverse = 1.0 / group_.size();
  inBuckets(
      params, bucket_bytes_, [&](size_t i) { return params[i].mutable_grad(); },
      [&](at::Tensor& flat) {
        group_.allReduceSum(flat, "gradient all-reduce");
        flat.mul_(inverse);
      });
  all_reduce_seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
}

std::vector<double> DataParallel::sum(const std::vector<double>& values, std::string_view what) {
  at::Tensor t = at::empty({static_cast<int64_t>(values.size())}, at::kDouble);
  std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(double));
  // NCCL reduces device tensors only.
  at::Tensor on_device = t.to(group_.device());
  group_.allReduceSum(on_device, what);
  const at::Tensor back = on_device.cpu();
  const auto* p = back.data_ptr<double>();
  return {p, p + values.size()};
}

double DataParallel::takeAllReduceSeconds() {
  return std::exchange(all_reduce_seconds_, 0.0);
}

std::optional<std::string> firstDifferingTensor(const model::StateDict& state,
                                                ProcessGroup& group) {
  std::string mine(state.size() * sizeof(uint64_t), '\0');
  for (size_t i = 0; i < state.size(); ++i) {
    const uint64_t h = checksum(state[i].second);
    std::memcpy(mine.data() + i * sizeof(uint64_t), &h, sizeof h);
  }
  const std::vector<std::string> all = group.allGatherBytes(mine, "replica check");
  for (size_t i = 0; i < state.size(); ++i) {
    std::string ranks;
    for (size_t r = 1; r < all.size(); ++r) {
      if (all[r].size() != mine.size() ||
          std::memcmp(all[r].data() + i * sizeof(uint64_t), all[0].data() + i * sizeof(uint64_t),
                      sizeof(uint64_t)) != 0) {
        ranks += (ranks.empty() ? "rank " : ", ") + std::to_string(r);
      }
    }
    if (!ranks.empty()) return state[i].first + " (" + ranks + " differ from rank 0)";
  }
  return std::nullopt;
}

}  // namespace mrcnn::dist
