// CPU kernels of mrcnn::encode_boxes and mrcnn::decode_boxes, parallel over boxes.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "engine/ops/box_coder_math.h"
#include "engine/ops/checks.h"

namespace mrcnn::ops::cpu {
namespace {

bool is_reduced_float(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

template <typename T>
detail::CoderWeights<T> coder_weights(double wx, double wy, double ww, double wh) {
  return {static_cast<T>(wx), static_cast<T>(wy), static_cast<T>(ww), static_cast<T>(wh)};
}

constexpr int64_t kGrain = 4096;

at::Tensor encode_boxes_cpu(const at::Tensor& reference_boxes, const at::Tensor& proposals,
                            double wx, double wy, double ww, double wh) {
  detail::check_encode_args(reference_boxes, proposals);
  TORCH_CHECK(reference_boxes.is_cpu() && proposals.is_cpu(), "encode_boxes: the CPU kernel got ",
              reference_boxes.device(), " and ", proposals.device(), " tensors");
  if (is_reduced_float(proposals)) {
    return encode_boxes_cpu(reference_boxes.to(at::kFloat), proposals.to(at::kFloat), wx, wy, ww,
                            wh)
        .to(proposals.scalar_type());
  }
  const int64_t n = proposals.size(0);
  at::Tensor targets = at::empty({n, 4}, proposals.options());
  if (n == 0) return targets;
  const at::Tensor r = reference_boxes.contiguous();
  const at::Tensor p = proposals.contiguous();
  AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "encode_boxes_cpu", [&] {
    const auto w = coder_weights<scalar_t>(wx, wy, ww, wh);
    const scalar_t* pr = r.const_data_ptr<scalar_t>();
    const scalar_t* pp = p.const_data_ptr<scalar_t>();
    scalar_t* out = targets.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        detail::encode_one(pr + i * 4, pp + i * 4, w, out + i * 4);
      }
    });
  });
  return targets;
}

at::Tensor decode_boxes_cpu(const at::Tensor& rel_codes, const at::Tensor& boxes, double wx,
                            double wy, double ww, double wh, double bbox_xform_clip) {
  detail::check_decode_args(rel_codes, boxes);
  TORCH_CHECK(rel_codes.is_cpu() && boxes.is_cpu(), "decode_boxes: the CPU kernel got ",
              rel_codes.device(), " and ", boxes.device(), " tensors");
  if (is_reduced_float(rel_codes)) {
    return decode_boxes_cpu(rel_codes.to(at::kFloat), boxes.to(at::kFloat), wx, wy, ww, wh,
                            bbox_xform_clip)
        .to(rel_codes.scalar_type());
  }
  const int64_t n = rel_codes.size(0);
  const int64_t k = rel_codes.size(1) / 4;
  at::Tensor pred = at::empty({n, 4 * k}, rel_codes.options());
  if (n == 0) return pred;
  const at::Tensor codes = rel_codes.contiguous();
  const at::Tensor b = boxes.to(rel_codes.scalar_type()).contiguous();
  AT_DISPATCH_FLOATING_TYPES(codes.scalar_type(), "decode_boxes_cpu", [&] {
    const auto w = coder_weights<scalar_t>(wx, wy, ww, wh);
    const auto clip = static_cast<scalar_t>(bbox_xform_clip);
    const scalar_t* pc = codes.const_data_ptr<scalar_t>();
    const scalar_t* pb = b.const_data_ptr<scalar_t>();
    scalar_t* out = pred.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, n * k, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        detail::decode_one(pc + e * 4, pb + (e / k) * 4, w, clip, out + e * 4);
      }
    });
  });
  return pred;
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("encode_boxes", TORCH_FN(mrcnn::ops::cpu::encode_boxes_cpu));
  m.impl("decode_boxes", TORCH_FN(mrcnn::ops::cpu::decode_boxes_cpu));
}
