// Batch norm whose training statistics are those of the global batch of a data-parallel job
// (SyncBatchNorm): each rank's per-channel sums are summed over the ranks by `reducer` (an
// all-reduce) in forward, and the sums backward needs in backward, so N ranks x b normalise
// as one process x N.b. Without a reducer, or in evaluation, it is torch::nn::BatchNorm2d:
// the same parameters and buffers under the same names (weight, bias, running_mean,
// running_var, num_batches_tracked), so checkpoints do not depend on the number of ranks.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <memory>

namespace mrcnn::model {

// Sums a tensor over every rank, in place; called the same number of times on every rank.
using TensorReducer = std::function<void(at::Tensor&)>;

class SyncBatchNorm2dImpl : public torch::nn::Module {
 public:
  SyncBatchNorm2dImpl(int64_t channels, TensorReducer reducer, double eps = 1e-5,
                      double momentum = 0.1);
  at::Tensor forward(const at::Tensor& input);

  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  std::shared_ptr<TensorReducer> reducer_;
  double eps_;
  double momentum_;
};
TORCH_MODULE(SyncBatchNorm2d);

}  // namespace mrcnn::model
