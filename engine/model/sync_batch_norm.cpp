#include "engine/model/sync_batch_norm.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/torch.h>

namespace mrcnn::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Per-channel shape for broadcasting against [N, C, H, W].
at::Tensor channels(const at::Tensor& v) { return v.view({1, -1, 1, 1}); }

// y = (x - mean) * invstd * weight + bias with the global batch's mean and invstd; backward
// sums dy and dy * (x - mean) over every rank (the reducer travels as an address in
// saved_data: the module that owns it outlives the graph).
class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input,
                            const at::Tensor& weight, const at::Tensor& bias,
                            const at::Tensor& mean, const at::Tensor& invstd, double count,
                            int64_t reducer) {
    const at::Tensor x = input.to(at::kFloat);
    ctx->save_for_backward({input, weight, mean, invstd});
    ctx->saved_data["count"] = count;
    ctx->saved_data["reducer"] = reducer;
    const at::Tensor y = (x - channels(mean)) * channels(invstd * weight.to(at::kFloat)) +
                         channels(bias.to(at::kFloat));
    return y.to(input.scalar_type());
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& mean = saved[2];
    const at::Tensor& invstd = saved[3];
    const double count = ctx->saved_data["count"].toDouble();
    auto* reducer = reinterpret_cast<TensorReducer*>(ctx->saved_data["reducer"].toInt());
    const at::Tensor dy = grads[0].to(at::kFloat);
    const at::Tensor xmu = input.to(at::kFloat) - channels(mean);
    const std::vector<int64_t> dims{0, 2, 3};
    const at::Tensor sum_dy = dy.sum(dims, false, at::kDouble);
    const at::Tensor sum_dy_xmu = (dy * xmu).sum(dims, false, at::kDouble);
    // This rank's share of the parameters' gradients (averaged with the others' later).
    const at::Tensor grad_weight = (sum_dy_xmu * invstd.to(at::kDouble)).to(weight.scalar_type());
    const at::Tensor grad_bias = sum_dy.to(weight.scalar_type());
    at::Tensor global = at::cat({sum_dy, sum_dy_xmu});
    (*reducer)(global);
    const int64_t c = mean.size(0);
    const at::Tensor mean_dy = (global.narrow(0, 0, c) / count).to(at::kFloat);
    const at::Tensor mean_dy_xmu = (global.narrow(0, c, c) / count).to(at::kFloat);
    const at::Tensor dx = (dy - channels(mean_dy) - xmu * channels(invstd * invstd * mean_dy_xmu)) *
                          channels(invstd * weight.to(at::kFloat));
    return {dx.to(input.scalar_type()), grad_weight, grad_bias, at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

}  // namespace

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(int64_t channels_count, TensorReducer reducer,
                                         double eps, double momentum)
    : reducer_(std::make_shared<TensorReducer>(std::move(reducer))),
      eps_(eps),
      momentum_(momentum) {
  weight = register_parameter("weight", at::ones({channels_count}));
  bias = register_parameter("bias", at::zeros({channels_count}));
  running_mean = register_buffer("running_mean", at::zeros({channels_count}));
  running_var = register_buffer("running_var", at::ones({channels_count}));
  num_batches_tracked = register_buffer("num_batches_tracked", at::zeros({}, at::kLong));
}

at::Tensor SyncBatchNorm2dImpl::forward(const at::Tensor& input) {
  if (!is_training() || !*reducer_) {
    if (is_training()) num_batches_tracked.add_(1);
    return at::batch_norm(input, weight, bias, running_mean, running_var, is_training(),
                          momentum_, eps_, at::globalContext().userEnabledCuDNN());
  }
  const int64_t c = input.size(1);
  at::Tensor stats;
  {
    torch::NoGradGuard no_grad;
    const at::Tensor x = input.detach();
    const std::vector<int64_t> dims{0, 2, 3};
    const double local = static_cast<double>(input.numel() / std::max<int64_t>(c, 1));
    stats = at::cat({x.sum(dims, false, at::kDouble), (x.to(at::kFloat) * x.to(at::kFloat)).sum(dims, false, at::kDouble),
                     at::full({1}, local, x.options().dtype(at::kDouble))});
  }
  (*reducer_)(stats);
  const double count = stats[2 * c].item<double>();
  const at::Tensor mean = stats.narrow(0, 0, c) / count;
  const at::Tensor var = (stats.narrow(0, c, c) / count - mean * mean).clamp_min(0);
  {
    torch::NoGradGuard no_grad;
    const double unbias = count > 1 ? count / (count - 1) : 1.0;
    running_mean.mul_(1 - momentum_).add_(mean.to(running_mean.scalar_type()), momentum_);
    running_var.mul_(1 - momentum_).add_((var * unbias).to(running_var.scalar_type()), momentum_);
    num_batches_tracked.add_(1);
  }
  const at::Tensor invstd = (var + eps_).rsqrt();
  return SyncBatchNormFunction::apply(input, weight, bias, mean.to(at::kFloat),
                                      invstd.to(at::kFloat), count,
                                      reinterpret_cast<int64_t>(reducer_.get()));
}

}  // namespace mrcnn::model
