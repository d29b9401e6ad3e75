// CUDA kernels of mrcnn::mask_targets and mrcnn::mask_targets_cropped: one thread per target
// pixel, torchvision's RoIAlign geometry (roi_align_geometry.h) on the RoI's matched mask, read
// in its own dtype from the whole mask or from its crop (mask_target_sources.h).
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>

#include "engine/ops/cuda/launch.cuh"
#include "engine/ops/mask_target_sources.h"
#include "engine/ops/mask_targets_checks.h"
#include "engine/ops/roi_align_geometry.h"

namespace mrcnn::ops::cuda {
namespace {

// masks: WholeMasks or CroppedMaskSet.
template <typename T, typename Masks>
__global__ void mask_targets_kernel(int64_t total, Masks masks, int64_t height, int64_t width,
                                    const T* __restrict__ rois, const int64_t* __restrict__ matched,
                                    int64_t M, T* __restrict__ out) {
  MRCNN_GRID_STRIDE_LOOP(index, total) {
    const int64_t pw = index % M;
    const int64_t ph = (index / M) % M;
    const int64_t k = index / M / M;
    const int64_t g_index = matched[k];
    if (!masks.readable(g_index)) {  // checking on the host would synchronise
      out[index] = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    const T roi[5] = {static_cast<T>(g_index), rois[k * 4], rois[k * 4 + 1], rois[k * 4 + 2],
                      rois[k * 4 + 3]};
    const detail::RoiGeometry<T> g(roi, T(1), M, M, /*sampling_ratio=*/-1, /*aligned=*/false);
    const auto in = masks[g_index];
    T sum = 0;
    for (int iy = 0; iy < g.grid_h; ++iy) {
      const T y = g.sample_y(ph, iy);
      for (int ix = 0; ix < g.grid_w; ++ix) {
        const auto p = detail::bilinear_corners(height, width, y, g.sample_x(pw, ix));
        if (!p.valid) continue;
        sum += p.w1 * static_cast<T>(in(p.y_low, p.x_low)) +
               p.w2 * static_cast<T>(in(p.y_low, p.x_high)) +
               p.w3 * static_cast<T>(in(p.y_high, p.x_low)) +
               p.w4 * static_cast<T>(in(p.y_high, p.x_high));
      }
    }
    const int samples = g.samples_per_bin();
    out[index] = sum / static_cast<T>(samples > 1 ? samples : 1);
  }
}

template <typename T, typename Masks>
void launch_on(const Masks& masks, int64_t height, int64_t width, const at::Tensor& rois,
               const at::Tensor& matched, int64_t M, at::Tensor& out) {
  const int64_t total = out.numel();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  mask_targets_kernel<T, Masks><<<blocks_for(total), kThreads, 0, stream>>>(
      total, masks, height, width, rois.const_data_ptr<T>(), matched.const_data_ptr<int64_t>(), M,
      out.mutable_data_ptr<T>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename MaskT>
void launch(const at::Tensor& masks, const at::Tensor& rois, const at::Tensor& matched, int64_t M,
            at::Tensor& out) {
  const int64_t h = masks.size(1), w = masks.size(2);
  const detail::WholeMasks<MaskT> whole{masks.const_data_ptr<MaskT>(), masks.size(0), h, w};
  launch_on<T>(whole, h, w, rois, matched, M, out);
}

at::Tensor mask_targets_cuda(const at::Tensor& gt_masks, const at::Tensor& rois,
                             const at::Tensor& matched_idxs, int64_t M) {
  detail::check_mask_targets_args(gt_masks, rois, matched_idxs, M);
  TORCH_CHECK(rois.is_cuda(), "mask_targets: the CUDA kernel got a ", rois.device(), " tensor");
  const c10::cuda::CUDAGuard device_guard(rois.device());
  at::Tensor out = at::empty({rois.size(0), M, M}, rois.options());
  if (out.numel() == 0) return out;
  const at::Tensor masks = gt_masks.contiguous();
  const at::Tensor r = rois.contiguous();
  const at::Tensor matched = matched_idxs.contiguous();
  AT_DISPATCH_FLOATING_TYPES(r.scalar_type(), "mask_targets_cuda", [&] {
    using T = scalar_t;
    switch (masks.scalar_type()) {
      case at::kByte:
        return launch<T, uint8_t>(masks, r, matched, M, out);
      case at::kBool:
        return launch<T, bool>(masks, r, matched, M, out);
      case at::kFloat:
        return launch<T, float>(masks, r, matched, M, out);
      case at::kDouble:
        return launch<T, double>(masks, r, matched, M, out);
      default:
        TORCH_CHECK(false, "mask_targets: unsupported gt_masks dtype ", masks.scalar_type());
    }
  });
  return out;
}

at::Tensor mask_targets_cropped_cuda(const at::Tensor& crops, const at::Tensor& windows,
                                     const at::Tensor& offsets, int64_t height, int64_t width,
                                     const at::Tensor& rois, const at::Tensor& matched_idxs,
                                     int64_t M) {
  detail::check_mask_targets_cropped_args(crops, windows, offsets, height, width, rois,
                                          matched_idxs, M);
  TORCH_CHECK(rois.is_cuda(), "mask_targets_cropped: the CUDA kernel got a ", rois.device(),
              " tensor");
  const c10::cuda::CUDAGuard device_guard(rois.device());
  at::Tensor out = at::empty({rois.size(0), M, M}, rois.options());
  if (out.numel() == 0) return out;
  const detail::CroppedMaskTensors crops_view =
      detail::cropped_mask_tensors(crops, windows, offsets, height, width);
  const at::Tensor r = rois.contiguous();
  const at::Tensor matched = matched_idxs.contiguous();
  AT_DISPATCH_FLOATING_TYPES(r.scalar_type(), "mask_targets_cropped_cuda", [&] {
    launch_on<scalar_t>(crops_view.set, height, width, r, matched, M, out);
  });
  return out;
}

}  // namespace
}  // namespace mrcnn::ops::cuda

TORCH_LIBRARY_IMPL(mrcnn, CUDA, m) {
  m.impl("mask_targets", TORCH_FN(mrcnn::ops::cuda::mask_targets_cuda));
  m.impl("mask_targets_cropped", TORCH_FN(mrcnn::ops::cuda::mask_targets_cropped_cuda));
}
