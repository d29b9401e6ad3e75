// CPU kernels of mrcnn::roi_align and mrcnn::multilevel_roi_align (forward and backward): one
// set of loops, in which each RoI reads the map its level names (roi_align has one).
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

// What every kernel needs to know of the call, for one feature map: the RoIs, the map's and
// the output's sizes, the sampling.
template <typename T>
struct RoiAlignCall {
  const T* rois;
  int64_t num_rois, channels, height, width, pooled_height, pooled_width, sampling_ratio;
  bool aligned;
  T spatial_scale;

  int64_t bins() const { return pooled_height * pooled_width; }
};

// Calls body(n, l, geometry, points, samples) for the RoIs n in [begin, end), in order: l =
// level_of(n) is the map RoI n is pooled from (calls[l] its call), points its sampling points
// (bin by bin) and samples the number of them a bin has (0 when it samples nothing).
template <typename T, typename LevelOf, typename Body>
void for_each_roi(const std::vector<RoiAlignCall<T>>& calls, LevelOf&& level_of, int64_t begin,
                  int64_t end, Body&& body) {
  std::vector<SamplePoint<T>> points;
  for (int64_t n = begin; n < end; ++n) {
    const int64_t l = level_of(n);
    const RoiAlignCall<T>& a = calls[static_cast<size_t>(l)];
    const RoiGeometry<T> g(a.rois + n * 5, a.spatial_scale, a.pooled_height, a.pooled_width,
                           a.sampling_ratio, a.aligned);
    sample_points(g, a.height, a.width, a.pooled_height, a.pooled_width, points);
    body(n, l, g, points.data(), g.samples_nothing() ? 0 : g.samples_per_bin());
  }
}

// RoI n's bins from NCHW features `input` into output row n (NCHW).
template <typename T>
void pool_roi(const RoiAlignCall<T>& a, int64_t n, const RoiGeometry<T>& g,
              const SamplePoint<T>* points, int samples, const T* input, T* output) {
  const int64_t plane = a.height * a.width;
  const int64_t bins = a.bins();
  const T count = static_cast<T>(std::max(g.samples_per_bin(), 1));
  for (int64_t c = 0; c < a.channels; ++c) {
    const T* in = input + (g.batch_index * a.channels + c) * plane;
    T* out = output + (n * a.channels + c) * bins;
    const SamplePoint<T>* p = points;
    for (int64_t bin = 0; bin < bins; ++bin) {
      T sum = 0;
      for (int s = 0; s < samples; ++s, ++p) {
        // Invalid points carry zero weights at position 0, as in torchvision.
        sum +=
            p->w1 * in[p->pos1] + p->w2 * in[p->pos2] + p->w3 * in[p->pos3] + p->w4 * in[p->pos4];
      }
      out[bin] = sum / count;
    }
  }
}

// One sampling point's bilinear sum over a pixel's channels, added to a bin's channels:
// out[k] += w1 * v1[k] + w2 * v2[k] + w3 * v3[k] + w4 * v4[k], then, after the bin's last
// point, out[k] /= count. The channels are contiguous on both sides, so these loops run in
// vector registers: compiled for AVX-512, AVX2 and the baseline, the one for this CPU chosen
// when the library loads. Each lane computes what the NCHW loop computes for its channel, in
// the same order and without fused multiply-adds (this file is compiled with
// -ffp-contract=off), so both layouts still give the same bits.
// The loops, inlined into each dtype's clones below (each clone vectorises its own copy).
template <typename T>
[[gnu::always_inline]] inline void add_point_loop(int64_t channels, T w1, const T* __restrict v1,
                                                  T w2, const T* __restrict v2, T w3,
                                                  const T* __restrict v3, T w4,
                                                  const T* __restrict v4, T* __restrict out) {
  for (int64_t k = 0; k < channels; ++k)
    out[k] += w1 * v1[k] + w2 * v2[k] + w3 * v3[k] + w4 * v4[k];
}
template <typename T>
[[gnu::always_inline]] inline void divide_loop(int64_t channels, T count, T* __restrict out) {
  for (int64_t k = 0; k < channels; ++k)
    out[k] = out[k] / count;
}
#define MRCNN_ROI_ALIGN_CLONES(T)                                                              \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void add_point(                 \
      int64_t channels, T w1, const T* v1, T w2, const T* v2, T w3, const T* v3, T w4,        \
      const T* v4, T* out) {                                                                   \
    add_point_loop(channels, w1, v1, w2, v2, w3, v3, w4, v4, out);                             \
  }                                                                                            \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void divide(int64_t channels,   \
                                                                           T count, T* out) {  \
    divide_loop(channels, count, out);                                                         \
  }
MRCNN_ROI_ALIGN_CLONES(float)
MRCNN_ROI_ALIGN_CLONES(double)
#undef MRCNN_ROI_ALIGN_CLONES

// The same sums over channels-last features, into a channels-last output row (zeroed by the
// caller): per bin, the sampling points outside, the channels inside (contiguous on both
// sides).
template <typename T>
void pool_roi_nhwc(const RoiAlignCall<T>& a, int64_t n, const RoiGeometry<T>& g,
                   const SamplePoint<T>* points, int samples, const T* input, T* output) {
  const int64_t channels = a.channels;
  const int64_t bins = a.bins();
  const T count = static_cast<T>(std::max(g.samples_per_bin(), 1));
  const T* in = input + g.batch_index * a.height * a.width * channels;
  const SamplePoint<T>* p = points;
  for (int64_t bin = 0; bin < bins; ++bin) {
    T* out = output + (n * bins + bin) * channels;
    for (int s = 0; s < samples; ++s, ++p) {
      add_point(channels, p->w1, in + p->pos1 * channels, p->w2, in + p->pos2 * channels, p->w3,
                in + p->pos3 * channels, p->w4, in + p->pos4 * channels, out);
    }
    divide(channels, count, out);
  }
}

// The forward pass over RoIs [0, num_rois): RoIs are split across threads; RoI n reads map
// level_of(n) (calls[l], inputs[l]).
template <typename T, typename LevelOf>
void forward_impl(const std::vector<RoiAlignCall<T>>& calls, const std::vector<const T*>& inputs,
                  LevelOf level_of, int64_t num_rois, bool channels_last, T* output) {
  const auto pool = channels_last ? pool_roi_nhwc<T> : pool_roi<T>;
  at::parallel_for(0, num_rois, 1, [&](int64_t begin, int64_t end) {
    for_each_roi(calls, level_of, begin, end,
                 [&](int64_t n, int64_t l, const RoiGeometry<T>& g, const SamplePoint<T>* points,
                     int samples) {
                   const size_t i = static_cast<size_t>(l);
                   pool(calls[i], n, g, points, samples, inputs[i], output);
                 });
  });
}

// The output gradient, read through its strides.
template <typename T>
struct GradView {
  const T* data;
  int64_t sn, sc, sh, sw;

  explicit GradView(const at::Tensor& grad)
      : data(grad.const_data_ptr<T>()),
        sn(grad.stride(0)),
        sc(grad.stride(1)),
        sh(grad.stride(2)),
        sw(grad.stride(3)) {}
};

// RoI n's share of the gradient, channels [c_begin, c_end), into NCHW grad_input.
template <typename T>
void scatter_roi(const RoiAlignCall<T>& a, int64_t n, const RoiGeometry<T>& g,
                 const SamplePoint<T>* points, int samples, const GradView<T>& go, int64_t c_begin,
                 int64_t c_end, T* grad_input) {
  const int64_t plane = a.height * a.width;
  const T count = static_cast<T>(g.samples_per_bin());
  for (int64_t c = c_begin; c < c_end; ++c) {
    T* gi = grad_input + (g.batch_index * a.channels + c) * plane;
    const SamplePoint<T>* p = points;
    for (int64_t ph = 0; ph < a.pooled_height; ++ph) {
      for (int64_t pw = 0; pw < a.pooled_width; ++pw) {
        const T g_bin = go.data[n * go.sn + c * go.sc + ph * go.sh + pw * go.sw];
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
}

// The same into channels-last grad_input: the RoI's bins and sampling points in the same
// order, its channels innermost.
template <typename T>
void scatter_roi_nhwc(const RoiAlignCall<T>& a, int64_t n, const RoiGeometry<T>& g,
                      const SamplePoint<T>* points, int samples, const GradView<T>& go,
                      int64_t c_begin, int64_t c_end, T* grad_input) {
  const int64_t channels = a.channels;
  const T count = static_cast<T>(g.samples_per_bin());
  T* gi = grad_input + g.batch_index * a.height * a.width * channels;
  const SamplePoint<T>* p = points;
  for (int64_t ph = 0; ph < a.pooled_height; ++ph) {
    for (int64_t pw = 0; pw < a.pooled_width; ++pw) {
      const T* g_bin = go.data + n * go.sn + ph * go.sh + pw * go.sw;
      for (int s = 0; s < samples; ++s, ++p) {
        if (!p->valid) continue;
        for (int64_t c = c_begin; c < c_end; ++c) {
          const T v = g_bin[c * go.sc];
          gi[p->pos1 * channels + c] += v * p->w1 / count;
          gi[p->pos2 * channels + c] += v * p->w2 / count;
          gi[p->pos3 * channels + c] += v * p->w3 / count;
          gi[p->pos4 * channels + c] += v * p->w4 / count;
        }
      }
    }
  }
}

// The backward pass: threads split the channels, and each visits every RoI in order, so
// that every map's pixels receive their terms in RoI order whatever the threads.
template <typename T, typename LevelOf>
void backward_impl(const std::vector<RoiAlignCall<T>>& calls, const std::vector<T*>& grad_inputs,
                   LevelOf level_of, int64_t num_rois, bool channels_last, const at::Tensor& grad) {
  const auto scatter = channels_last ? scatter_roi_nhwc<T> : scatter_roi<T>;
  const GradView<T> go(grad);
  at::parallel_for(0, calls[0].channels, 1, [&](int64_t c_begin, int64_t c_end) {
    for_each_roi(calls, level_of, 0, num_rois,
                 [&](int64_t n, int64_t l, const RoiGeometry<T>& g, const SamplePoint<T>* points,
                     int samples) {
                   const size_t i = static_cast<size_t>(l);
                   scatter(calls[i], n, g, points, samples, go, c_begin, c_end, grad_inputs[i]);
                 });
  });
}

// Every RoI on the one map of roi_align.
constexpr auto kOneLevel = [](int64_t) -> int64_t { return 0; };

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
    forward_impl<scalar_t>({call}, {in.const_data_ptr<scalar_t>()}, kOneLevel, num_rois,
                           layout == at::MemoryFormat::ChannelsLast,
                           output.mutable_data_ptr<scalar_t>());
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
    backward_impl<scalar_t>({call}, {grad_input.mutable_data_ptr<scalar_t>()}, kOneLevel,
                            rois.size(0), channels_last, grad);
  });
  return grad_input;
}

void check_levels(const char* op, const at::Tensor& levels, size_t num_levels) {
  const int64_t* level = levels.const_data_ptr<int64_t>();
  const auto n = static_cast<int64_t>(num_levels);
  for (int64_t k = 0; k < levels.numel(); ++k) {
    TORCH_CHECK(level[k] >= 0 && level[k] < n, op, ": levels[", k, "] = ", level[k],
                " is outside [0, ", n, ")");
  }
}

at::Tensor multilevel_roi_align_forward_cpu(at::TensorList features, const at::Tensor& rois,
                                            const at::Tensor& levels, at::ArrayRef<double> scales,
                                            int64_t pooled_height, int64_t pooled_width,
                                            int64_t sampling_ratio, bool aligned) {
  constexpr const char* op = "multilevel_roi_align";
  detail::check_multilevel_roi_align_args(op, features, rois, levels, scales, pooled_height,
                                          pooled_width);
  const at::Tensor& first = features[0];
  TORCH_CHECK(first.is_cpu(), op, ": the CPU kernel got a ", first.device(), " tensor");
  if (is_reduced_float(first)) {  // half, bfloat16: computed in float
    std::vector<at::Tensor> in_float;
    for (const at::Tensor& f : features)
      in_float.push_back(f.to(at::kFloat));
    return multilevel_roi_align_forward_cpu(in_float, rois, levels, scales, pooled_height,
                                            pooled_width, sampling_ratio, aligned)
        .to(first.scalar_type());
  }
  const int64_t num_rois = rois.size(0);
  const int64_t channels = first.size(1);
  const at::MemoryFormat layout = first.suggest_memory_format();
  at::Tensor output = at::empty({num_rois, channels, pooled_height, pooled_width},
                                first.options().memory_format(layout))
                          .zero_();
  if (output.numel() == 0) return output;
  std::vector<at::Tensor> maps;  // all in the first map's layout
  for (size_t l = 0; l < features.size(); ++l) {
    TORCH_CHECK(features[l].size(2) > 0 && features[l].size(3) > 0, op, ": features[", l,
                "] has an empty spatial size ", features[l].sizes());
    maps.push_back(features[l].contiguous(layout));
  }
  const at::Tensor r = rois.to(first.scalar_type()).contiguous();  // computed in the maps' dtype
  const at::Tensor lv = levels.contiguous();
  check_batch_indices(op, r, first.size(0));
  check_levels(op, lv, maps.size());
  AT_DISPATCH_FLOATING_TYPES(first.scalar_type(), "multilevel_roi_align_forward_cpu", [&] {
    std::vector<RoiAlignCall<scalar_t>> calls;
    std::vector<const scalar_t*> inputs;
    for (size_t l = 0; l < maps.size(); ++l) {
      calls.push_back({r.const_data_ptr<scalar_t>(), num_rois, channels, maps[l].size(2),
                       maps[l].size(3), pooled_height, pooled_width, sampling_ratio, aligned,
                       static_cast<scalar_t>(scales[l])});
      inputs.push_back(maps[l].const_data_ptr<scalar_t>());
    }
    const int64_t* level = lv.const_data_ptr<int64_t>();
    forward_impl<scalar_t>(
        calls, inputs, [level](int64_t n) { return level[n]; }, num_rois,
        layout == at::MemoryFormat::ChannelsLast, output.mutable_data_ptr<scalar_t>());
  });
  return output;
}

std::vector<at::Tensor> multilevel_roi_align_backward_cpu(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> scales, int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
    int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths, int64_t sampling_ratio,
    bool aligned, bool channels_last) {
  constexpr const char* op = "multilevel_roi_align_backward";
  detail::check_multilevel_roi_align_backward_args(op, grad, rois, levels, scales, pooled_height,
                                                   pooled_width, channels, heights, widths);
  TORCH_CHECK(grad.is_cpu(), op, ": the CPU kernel got a ", grad.device(), " tensor");
  if (is_reduced_float(grad)) {
    std::vector<at::Tensor> grads = multilevel_roi_align_backward_cpu(
        grad.to(at::kFloat), rois, levels, scales, pooled_height, pooled_width, batch_size,
        channels, heights, widths, sampling_ratio, aligned, channels_last);
    for (at::Tensor& g : grads)
      g = g.to(grad.scalar_type());
    return grads;
  }
  const at::MemoryFormat layout =
      channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  std::vector<at::Tensor> grad_inputs;
  for (size_t l = 0; l < scales.size(); ++l) {
    grad_inputs.push_back(at::empty({batch_size, channels, heights[l], widths[l]},
                                    grad.options().memory_format(layout))
                              .zero_());
  }
  if (grad.numel() == 0 || batch_size == 0) return grad_inputs;
  const at::Tensor r = rois.to(grad.scalar_type()).contiguous();
  const at::Tensor lv = levels.contiguous();
  check_batch_indices(op, r, batch_size);
  check_levels(op, lv, scales.size());
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "multilevel_roi_align_backward_cpu", [&] {
    std::vector<RoiAlignCall<scalar_t>> calls;
    std::vector<scalar_t*> outputs;
    for (size_t l = 0; l < scales.size(); ++l) {
      calls.push_back({r.const_data_ptr<scalar_t>(), rois.size(0), channels, heights[l], widths[l],
                       pooled_height, pooled_width, sampling_ratio, aligned,
                       static_cast<scalar_t>(scales[l])});
      outputs.push_back(grad_inputs[l].mutable_data_ptr<scalar_t>());
    }
    const int64_t* level = lv.const_data_ptr<int64_t>();
    backward_impl<scalar_t>(
        calls, outputs, [level](int64_t n) { return level[n]; }, rois.size(0), channels_last, grad);
  });
  return grad_inputs;
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("roi_align", TORCH_FN(mrcnn::ops::cpu::roi_align_forward_cpu));
  m.impl("_roi_align_backward", TORCH_FN(mrcnn::ops::cpu::roi_align_backward_cpu));
  m.impl("multilevel_roi_align", TORCH_FN(mrcnn::ops::cpu::multilevel_roi_align_forward_cpu));
  m.impl("_multilevel_roi_align_backward",
         TORCH_FN(mrcnn::ops::cpu::multilevel_roi_align_backward_cpu));
}
