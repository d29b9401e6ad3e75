// CPU kernels of mrcnn::mask_targets and mrcnn::mask_targets_cropped, parallel over the RoIs.
// Each RoI is RoIAlign of one channel (its matched mask) with torchvision's geometry
// (roi_align_geometry.h) and torchvision's summation order, the mask values converted to the
// RoIs' dtype as they are read, from a whole mask or from its crop (mask_target_sources.h).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>

#include "engine/ops/mask_target_sources.h"
#include "engine/ops/mask_targets_checks.h"
#include "engine/ops/roi_align_geometry.h"

namespace mrcnn::ops::cpu {
namespace {

// masks: WholeMasks or CroppedMaskSet; every matched index already checked readable.
template <typename T, typename Masks>
void mask_targets_impl(const Masks& masks, int64_t height, int64_t width, const T* rois,
                       const int64_t* matched, int64_t num_rois, int64_t M, T* out) {
  at::parallel_for(0, num_rois, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      // torchvision's rois row: (matched index as the batch index, x1, y1, x2, y2).
      const T roi[5] = {static_cast<T>(matched[k]), rois[k * 4], rois[k * 4 + 1], rois[k * 4 + 2],
                        rois[k * 4 + 3]};
      const detail::RoiGeometry<T> g(roi, /*spatial_scale=*/T(1), M, M, /*sampling_ratio=*/-1,
                                     /*aligned=*/false);
      const auto in = masks[matched[k]];
      const T count = static_cast<T>(std::max(g.samples_per_bin(), 1));
      T* o = out + k * M * M;
      for (int64_t ph = 0; ph < M; ++ph) {
        for (int64_t pw = 0; pw < M; ++pw) {
          T sum = 0;
          for (int iy = 0; iy < g.grid_h; ++iy) {
            const T y = g.sample_y(ph, iy);
            for (int ix = 0; ix < g.grid_w; ++ix) {
              const auto p = detail::bilinear_corners(height, width, y, g.sample_x(pw, ix));
              // Invalid points carry zero weights at position 0, as in torchvision.
              sum += p.w1 * static_cast<T>(in(p.y_low, p.x_low)) +
                     p.w2 * static_cast<T>(in(p.y_low, p.x_high)) +
                     p.w3 * static_cast<T>(in(p.y_high, p.x_low)) +
                     p.w4 * static_cast<T>(in(p.y_high, p.x_high));
            }
          }
          o[ph * M + pw] = sum / count;
        }
      }
    }
  });
}

template <typename T, typename MaskT>
void run_on_whole(const at::Tensor& masks, const T* rois, const int64_t* matched, int64_t num_rois,
                  int64_t M, T* out) {
  const int64_t h = masks.size(1), w = masks.size(2);
  const detail::WholeMasks<MaskT> whole{masks.const_data_ptr<MaskT>(), masks.size(0), h, w};
  mask_targets_impl(whole, h, w, rois, matched, num_rois, M, out);
}

template <typename T>
void run_for_mask_dtype(const at::Tensor& masks, const T* rois, const int64_t* matched,
                        int64_t num_rois, int64_t M, T* out) {
  switch (masks.scalar_type()) {
    case at::kByte:
      return run_on_whole<T, uint8_t>(masks, rois, matched, num_rois, M, out);
    case at::kBool:
      return run_on_whole<T, bool>(masks, rois, matched, num_rois, M, out);
    case at::kFloat:
      return run_on_whole<T, float>(masks, rois, matched, num_rois, M, out);
    case at::kDouble:
      return run_on_whole<T, double>(masks, rois, matched, num_rois, M, out);
    default:
      TORCH_CHECK(false, "mask_targets: unsupported gt_masks dtype ", masks.scalar_type());
  }
}

// Each RoI's matched index must name a mask (num_masks of them).
void check_matched(const char* op, const int64_t* matched, int64_t num_rois, int64_t num_masks) {
  for (int64_t k = 0; k < num_rois; ++k) {
    TORCH_CHECK(matched[k] >= 0 && matched[k] < num_masks, op, ": matched_idxs[", k,
                "] = ", matched[k], " is outside [0, ", num_masks, ") (", num_masks,
                " ground-truth masks)");
  }
}

at::Tensor mask_targets_cpu(const at::Tensor& gt_masks, const at::Tensor& rois,
                            const at::Tensor& matched_idxs, int64_t M) {
  detail::check_mask_targets_args(gt_masks, rois, matched_idxs, M);
  TORCH_CHECK(rois.is_cpu(), "mask_targets: the CPU kernel got a ", rois.device(), " tensor");
  const int64_t num_rois = rois.size(0);
  at::Tensor out = at::empty({num_rois, M, M}, rois.options());
  if (num_rois == 0) return out;

  const at::Tensor idx = matched_idxs.contiguous();
  const int64_t* matched = idx.const_data_ptr<int64_t>();
  check_matched("mask_targets", matched, num_rois, gt_masks.size(0));
  const at::Tensor masks = gt_masks.contiguous();
  const at::Tensor r = rois.contiguous();
  AT_DISPATCH_FLOATING_TYPES(r.scalar_type(), "mask_targets_cpu", [&] {
    run_for_mask_dtype<scalar_t>(masks, r.const_data_ptr<scalar_t>(), matched, num_rois, M,
                                 out.mutable_data_ptr<scalar_t>());
  });
  return out;
}

at::Tensor mask_targets_cropped_cpu(const at::Tensor& crops, const at::Tensor& windows,
                                    const at::Tensor& offsets, int64_t height, int64_t width,
                                    const at::Tensor& rois, const at::Tensor& matched_idxs,
                                    int64_t M) {
  detail::check_mask_targets_cropped_args(crops, windows, offsets, height, width, rois,
                                          matched_idxs, M);
  TORCH_CHECK(rois.is_cpu(), "mask_targets_cropped: the CPU kernel got a ", rois.device(),
              " tensor");
  const int64_t num_rois = rois.size(0);
  at::Tensor out = at::empty({num_rois, M, M}, rois.options());
  if (num_rois == 0) return out;

  const at::Tensor idx = matched_idxs.contiguous();
  const int64_t* matched = idx.const_data_ptr<int64_t>();
  check_matched("mask_targets_cropped", matched, num_rois, windows.size(0));
  const detail::CroppedMaskTensors crops_view =
      detail::cropped_mask_tensors(crops, windows, offsets, height, width);
  const detail::CroppedMaskSet& set = crops_view.set;
  for (int64_t k = 0; k < num_rois; ++k) {
    const int64_t g = matched[k];
    TORCH_CHECK(set.readable(g), "mask_targets_cropped: mask ", g, "'s window (",
                set.windows[4 * g], ", ", set.windows[4 * g + 1], ", ", set.windows[4 * g + 2],
                " x ", set.windows[4 * g + 3], ") at byte ", set.offsets[g], " does not fit its ",
                width, " x ", height, " image or the ", set.bytes, " bytes of crops");
  }
  const at::Tensor r = rois.contiguous();
  AT_DISPATCH_FLOATING_TYPES(r.scalar_type(), "mask_targets_cropped_cpu", [&] {
    mask_targets_impl(set, height, width, r.const_data_ptr<scalar_t>(), matched, num_rois, M,
                      out.mutable_data_ptr<scalar_t>());
  });
  return out;
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("mask_targets", TORCH_FN(mrcnn::ops::cpu::mask_targets_cpu));
  m.impl("mask_targets_cropped", TORCH_FN(mrcnn::ops::cpu::mask_targets_cropped_cpu));
}
