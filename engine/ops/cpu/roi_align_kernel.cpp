// CPU kernels of mrcnn::roi_align and mrcnn::_roi_align_backward.
//
// Forward: RoIs are independent, so they are split across threads; the sampling points of a
// RoI are computed once and reused for every channel. Backward: several RoIs scatter into the
// same pixels, so threads split the channels instead; each thread visits every RoI in order,
// which keeps the accumulation order (RoI, bin, sampling point) of torchvision's serial
// kernel and hence its exact float sums.
//
// Channels-last features (NHWC, a pixel's channels side by side) are read where they are:
// the loops then run over the channels innermost, and every output or gradient element gets
// the same terms in the same order as from NCHW features, so both layouts give the same bits.
// The output (forward) or the input gradient (backward) has the features' layout.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "engine/ops/checks.h"
#include "engine/ops/roi_align_geometry.h"

namespace mrcnn::ops::cpu {
namespace {

using detail::RoiGeometry;
using detail::SamplePoint;

// All sampling points of a RoI, bin by bin (ph, pw), then iy, ix within a bin; none when
// the RoI samples nothing.
template <typename T>
void sample_points(const RoiGeometry<T>& g, int64_t height, int64_t width, int64_t pooled_height,
                   int64_t pooled_width, std::vector<SamplePoint<T>>& points) {
  points.clear();
  if (g.samples_nothing()) return;
  points.reserve(static_cast<size_t>(pooled_height * pooled_width * g.samples_per_bin()));
  for (int64_t ph = 0; ph < pooled_height; ++ph) {
    for (int64_t pw = 0; pw < pooled_width; ++pw) {
      for (int iy = 0; iy < g.grid_h; ++iy) {
        const T y = g.sample_y(ph, iy);
        for (int ix = 0; ix < g.grid_w; ++ix) {
          points.push_back(detail::bilinear_point(height, width, y, g.sample_x(pw, ix)));
        }
      }
    }
  }
}

bool is_reduced_float(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

void check_batch_indices(const char* op, const at::Tensor& rois, int64_t batch_size) {
  AT_DISPATCH_FLOATING_TYPES(rois.scalar_type(), "check_batch_indices", [&] {
    const auto r = rois.accessor<scalar_t, 2>();
    for (int64_t k = 0; k < rois.size(0); ++k) {
      const auto b = static_cast<int64_t>(r[k][0]);
      TORCH_CHECK(b >= 0 && b < batch_size, op, ": rois[", k, "] has batch index ", r[k][0],
                  ", outside [0, ", batch_size, ")");
    }
  });
}

// What every kernel needs to know of the call: the RoIs, the features' and the output's sizes,
// the sampling.
template <typename T>
struct RoiAlignCall {
  const T* rois;
  int64_t num_rois, channels, height, width, pooled_height, pooled_width, sampling_ratio;
  bool aligned;
  T spatial_scale;

  int64_t bins() const { return pooled_height * pooled_width; }
};

// Calls body(n, geometry, points, samples) for the RoIs n in [begin, end), in order, with the
// RoI's sampling points (bin by bin) and the number of them a bin has (0 when it samples
// nothing).
template <typename T, typename Body>
void for_each_roi(const RoiAlignCall<T>& a, int64_t begin, int64_t end, Body&& body) {
  std::vector<SamplePoint<T>> points;
  for (int64_t n = begin; n < end; ++n) {
    const RoiGeometry<T> g(a.rois + n * 5, a.spatial_scale, a.pooled_height, a.pooled_width,
                           a.sampling_ratio, a.aligned);
    sample_points(g, a.height, a.width, a.pooled_height, a.pooled_width, points);
    body(n, g, points.data(), g.samples_nothing() ? 0 : g.samples_per_bin());
  }
}

template <typename T>
void forward_impl(const RoiAlignCall<T>& a, const T* input, T* output) {
  const int64_t plane = a.height * a.width;
  const int64_t bins = a.bins();
  at::parallel_for(0, a.num_rois, 1, [&](int64_t begin, int64_t end) {
    for_each_roi(
        a, begin, end,
        [&](int64_t n, const RoiGeometry<T>& g, const SamplePoint<T>* points, int samples) {
          const T count = static_cast<T>(std::max(g.samples_per_bin(), 1));
          for (int64_t c = 0; c < a.channels; ++c) {
            const T* in = input + (g.batch_index * a.channels + c) * plane;
            T* out = output + (n * a.channels + c) * bins;
            const SamplePoint<T>* p = points;
            for (int64_t bin = 0; bin < bins; ++bin) {
              T sum = 0;
              for (int s = 0; s < samples; ++s, ++p) {
                // Invalid points carry zero weights at position 0, as in torchvision.
                sum += p->w1 * in[p->pos1] + p->w2 * in[p->pos2] + p->w3 * in[p->pos3] +
                       p->w4 * in[p->pos4];
              }
              out[bin] = sum / count;
            }
          }
        });
  });
}

// The same sums over channels-last features, into a channels-last output: per bin, the
// sampling points outside, the channels inside (contiguous on both sides).
template <typename T>
void forward_impl_nhwc(const RoiAlignCall<T>& a, const T* input, T* output) {
  const int64_t channels = a.channels;
  const int64_t bins = a.bins();
  at::parallel_for(0, a.num_rois, 1, [&](int64_t begin, int64_t end) {
    for_each_roi(
        a, begin, end,
        [&](int64_t n, const RoiGeometry<T>& g, const SamplePoint<T>* points, int samples) {
          const T count = static_cast<T>(std::max(g.samples_per_bin(), 1));
          const T* in = input + g.batch_index * a.height * a.width * channels;
          const SamplePoint<T>* p = points;
          for (int64_t bin = 0; bin < bins; ++bin) {
            T* out = output + (n * bins + bin) * channels;  // zeroed by the caller
            for (int s = 0; s < samples; ++s, ++p) {
              const T* v1 = in + p->pos1 * channels;
              const T* v2 = in + p->pos2 * channels;
              const T* v3 = in + p->pos3 * channels;
              const T* v4 = in + p->pos4 * channels;
              for (int64_t k = 0; k < channels; ++k)
                out[k] += p->w1 * v1[k] + p->w2 * v2[k] + p->w3 * v3[k] + p->w4 * v4[k];
            }
            for (int64_t k = 0; k < channels; ++k)
              out[k] = out[k] / count;
          }
        });
  });
}

template <typename T>
void backward_impl(const RoiAlignCall<T>& a, const at::Tensor& grad, T* grad_input) {
  const int64_t plane = a.height * a.width;
  const T* go = grad.const_data_ptr<T>();
  const int64_t sn = grad.stride(0), sc = grad.stride(1), sh = grad.stride(2), sw = grad.stride(3);
  at::parallel_for(0, a.channels, 1, [&](int64_t c_begin, int64_t c_end) {
    for_each_roi(
        a, 0, a.num_rois,
        [&](int64_t n, const RoiGeometry<T>& g, const SamplePoint<T>* points, int samples) {
          const T count = static_cast<T>(g.samples_per_bin());
          for (int64_t c = c_begin; c < c_end; ++c) {
            T* gi = grad_input + (g.batch_index * a.channels + c) * plane;
            const SamplePoint<T>* p = points;
            for (int64_t ph = 0; ph < a.pooled_height; ++ph) {
              for (int64_t pw = 0; pw < a.pooled_width; ++pw) {
                const T g_bin = go[n * sn + c * sc + ph * sh + pw * sw];
                for (int s = 0; s < samples; ++s, ++p) {
                  if (!p->valid) continue;
                  gi[p->pos1] += g_bin * p->w1 / count;
                  gi[p->pos2] += g_bin * p->w2 / count;
                  gi[p->pos3] += g_bin * p->w3 / count;
                  gi[p->pos4] += g_bin * p->w4 / count;
                }
              }
            }
          }
        });
  });
}

// The gradient into channels-last features: threads split the channels as above, and each
// visits the RoIs, bins and sampling points in the same order, its channels innermost.
template <typename T>
void backward_impl_nhwc(const RoiAlignCall<T>& a, const at::Tensor& grad, T* grad_input) {
  const int64_t channels = a.channels;
  const T* go = grad.const_data_ptr<T>();
  const int64_t sn = grad.stride(0), sc = grad.stride(1), sh = grad.stride(2), sw = grad.stride(3);
  at::parallel_for(0, channels, 1, [&](int64_t c_begin, int64_t c_end) {
    for_each_roi(
        a, 0, a.num_rois,
        [&](int64_t n, const RoiGeometry<T>& g, const SamplePoint<T>* points, int samples) {
          const T count = static_cast<T>(g.samples_per_bin());
          T* gi = grad_input + g.batch_index * a.height * a.width * channels;
          const SamplePoint<T>* p = points;
          for (int64_t ph = 0; ph < a.pooled_height; ++ph) {
            for (int64_t pw = 0; pw < a.pooled_width; ++pw) {
              const T* g_bin = go + n * sn + ph * sh + pw * sw;
              for (int s = 0; s < samples; ++s, ++p) {
                if (!p->valid) continue;
                for (int64_t c = c_begin; c < c_end; ++c) {
                  const T v = g_bin[c * sc];
                  gi[p->pos1 * channels + c] += v * p->w1 / count;
                  gi[p->pos2 * channels + c] += v * p->w2 / count;
                  gi[p->pos3 * channels + c] += v * p->w3 / count;
                  gi[p->pos4 * channels + c] += v * p->w4 / count;
                }
              }
            }
          }
        });
  });
}

at::Tensor roi_align_forward_cpu(const at::Tensor& input, const at::Tensor& rois,
                                 double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                 int64_t sampling_ratio, bool aligned) {
  detail::check_roi_align_args("roi_align", input, "input", rois, pooled_height, pooled_width);
  TORCH_CHECK(input.is_cpu(), "roi_align: the CPU kernel got a ", input.device(), " tensor");
  if (is_reduced_float(input)) {  // half, bfloat16: computed in float
    return roi_align_forward_cpu(input.to(at::kFloat), rois.to(at::kFloat), spatial_scale,
                                 pooled_height, pooled_width, sampling_ratio, aligned)
        .to(input.scalar_type());
  }
  const int64_t num_rois = rois.size(0);
  const int64_t channels = input.size(1);
  const at::MemoryFormat layout = input.suggest_memory_format();
  // (at::zeros takes no memory format: an empty tensor in the layout, zeroed.)
  at::Tensor output = at::empty({num_rois, channels, pooled_height, pooled_width},
                                input.options().memory_format(layout))
                          .zero_();
  if (output.numel() == 0) return output;
  TORCH_CHECK(input.size(2) > 0 && input.size(3) > 0, "roi_align: input has an empty spatial size ",
              input.sizes());
  check_batch_indices("roi_align", rois, input.size(0));

  const at::Tensor in = input.contiguous(layout);
  const at::Tensor r = rois.contiguous();
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "roi_align_forward_cpu", [&] {
    const RoiAlignCall<scalar_t> call{r.const_data_ptr<scalar_t>(),
                                      num_rois,
                                      channels,
                                      input.size(2),
                                      input.size(3),
                                      pooled_height,
                                      pooled_width,
                                      sampling_ratio,
                                      aligned,
                                      static_cast<scalar_t>(spatial_scale)};
    const auto kernel = layout == at::MemoryFormat::ChannelsLast ? forward_impl_nhwc<scalar_t>
                                                                 : forward_impl<scalar_t>;
    kernel(call, in.const_data_ptr<scalar_t>(), output.mutable_data_ptr<scalar_t>());
  });
  return output;
}

at::Tensor roi_align_backward_cpu(const at::Tensor& grad, const at::Tensor& rois,
                                  double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                  int64_t batch_size, int64_t channels, int64_t height,
                                  int64_t width, int64_t sampling_ratio, bool aligned,
                                  bool channels_last) {
  detail::check_roi_align_args("roi_align_backward", grad, "grad", rois, pooled_height,
                               pooled_width);
  TORCH_CHECK(grad.is_cpu(), "roi_align_backward: the CPU kernel got a ", grad.device(), " tensor");
  TORCH_CHECK(grad.size(0) == rois.size(0) && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width,
              "roi_align_backward: grad must be [K, C, pooled_height, pooled_width] = [",
              rois.size(0), ", ", channels, ", ", pooled_height, ", ", pooled_width, "], got ",
              grad.sizes());
  if (is_reduced_float(grad)) {
    return roi_align_backward_cpu(grad.to(at::kFloat), rois.to(at::kFloat), spatial_scale,
                                  pooled_height, pooled_width, batch_size, channels, height, width,
                                  sampling_ratio, aligned, channels_last)
        .to(grad.scalar_type());
  }
  const at::MemoryFormat layout =
      channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor grad_input =
      at::empty({batch_size, channels, height, width}, grad.options().memory_format(layout))
          .zero_();
  if (grad.numel() == 0 || grad_input.numel() == 0) return grad_input;
  check_batch_indices("roi_align_backward", rois, batch_size);

  const at::Tensor r = rois.contiguous();
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "roi_align_backward_cpu", [&] {
    const RoiAlignCall<scalar_t> call{r.const_data_ptr<scalar_t>(),
                                      rois.size(0),
                                      channels,
                                      height,
                                      width,
                                      pooled_height,
                                      pooled_width,
                                      sampling_ratio,
                                      aligned,
                                      static_cast<scalar_t>(spatial_scale)};
    const auto kernel = channels_last ? backward_impl_nhwc<scalar_t> : backward_impl<scalar_t>;
    kernel(call, grad, grad_input.mutable_data_ptr<scalar_t>());
  });
  return grad_input;
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("roi_align", TORCH_FN(mrcnn::ops::cpu::roi_align_forward_cpu));
  m.impl("_roi_align_backward", TORCH_FN(mrcnn::ops::cpu::roi_align_backward_cpu));
}
