// One box through torchvision's BoxCoder, shared by the CPU and CUDA kernels. The operation
// order is BoxCoder's (encode_boxes / decode_single) so that float results match it; only
// exp and log may differ from ATen's vectorised ones by an ulp.
#pragma once

#include "engine/ops/host_device.h"

namespace mrcnn::ops::detail {

template <typename T>
struct CoderWeights {
  T wx, wy, ww, wh;
};

// out = (dx, dy, dw, dh) of reference box r relative to proposal p.
template <typename T>
MRCNN_HOST_DEVICE void encode_one(const T* r, const T* p, const CoderWeights<T>& w, T* out) {
  const T half = static_cast<T>(0.5);
  const T ex_w = p[2] - p[0];
  const T ex_h = p[3] - p[1];
  const T ex_cx = p[0] + half * ex_w;
  const T ex_cy = p[1] + half * ex_h;
  const T gt_w = r[2] - r[0];
  const T gt_h = r[3] - r[1];
  const T gt_cx = r[0] + half * gt_w;
  const T gt_cy = r[1] + half * gt_h;
  out[0] = w.wx * (gt_cx - ex_cx) / ex_w;
  out[1] = w.wy * (gt_cy - ex_cy) / ex_h;
  out[2] = w.ww * log_of(gt_w / ex_w);
  out[3] = w.wh * log_of(gt_h / ex_h);
}

// out = the box that code (dx, dy, dw, dh) makes of box b; dw, dh clamped at clip.
template <typename T>
MRCNN_HOST_DEVICE void decode_one(const T* code, const T* b, const CoderWeights<T>& w, T clip,
                                  T* out) {
  const T half = static_cast<T>(0.5);
  const T width = b[2] - b[0];
  const T height = b[3] - b[1];
  const T ctr_x = b[0] + half * width;
  const T ctr_y = b[1] + half * height;
  const T dx = code[0] / w.wx;
  const T dy = code[1] / w.wy;
  // torch.clamp(max=) keeps NaN; min_of(NaN, clip) does too.
  const T dw = min_of(code[2] / w.ww, clip);
  const T dh = min_of(code[3] / w.wh, clip);
  const T pred_ctr_x = dx * width + ctr_x;
  const T pred_ctr_y = dy * height + ctr_y;
  const T pred_w = exp_of(dw) * width;
  const T pred_h = exp_of(dh) * height;
  const T c_to_c_w = half * pred_w;
  const T c_to_c_h = half * pred_h;
  out[0] = pred_ctr_x - c_to_c_w;
  out[1] = pred_ctr_y - c_to_c_h;
  out[2] = pred_ctr_x + c_to_c_w;
  out[3] = pred_ctr_y + c_to_c_h;
}

}  // namespace mrcnn::ops::detail
