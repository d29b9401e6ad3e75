// Where a mask lands in the image and how it is resampled there, shared by the CPU and CUDA
// kernels of mrcnn::paste_masks: torchvision's paste_masks_in_image step by step (expand_masks,
// expand_boxes, the integer box, F.interpolate bilinear with align_corners=False) but for one
// output pixel at a time. The arithmetic follows torchvision's and ATen's CPU kernels operation
// by operation (types, order, literals), so float results agree with theirs on the CPU.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>
#include <type_traits>

#include "engine/ops/host_device.h"

namespace mrcnn::ops::detail {

// a * b rounded on its own: nvcc would otherwise fuse it into a following add (FMA), and the
// integer box must see the same rounding as torchvision's separate tensor operations.
template <typename T>
MRCNN_HOST_DEVICE T mul_rounded(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    return __fmul_rn(a, b);
  } else {
    return __dmul_rn(a, b);
  }
#else
  return a * b;
#endif
}

template <typename T>
MRCNN_HOST_DEVICE T floor_of(T v) {
#if defined(__CUDA_ARCH__)
  return ::floor(v);
#else
  return std::floor(v);
#endif
}

// A mask's integer box in the image and the part of it inside the image (image pixels,
// half-open, empty when begin >= end). The resampled mask is w x h; its pixel (0, 0) is the
// image pixel (x0, y0). Eight int64 in this order: the CUDA kernels keep them in a tensor.
struct PasteWindow {
  int64_t x0, y0;  // the integer box's top-left corner
  int64_t w, h;    // the resampled mask's size, at least 1 x 1
  int64_t x_begin, x_end, y_begin, y_end;

  MRCNN_HOST_DEVICE bool empty() const { return x_begin >= x_end || y_begin >= y_end; }
};
static_assert(sizeof(PasteWindow) == 8 * sizeof(int64_t));

// box: (x1, y1, x2, y2) in its own dtype B; scale: (M + 2 * padding) / M, rounded to B as
// PyTorch rounds a Python float multiplied into a B tensor. torchvision's expand_boxes (half
// sizes scaled about the centre), then truncation to int64, then paste_mask_in_image's window.
// Beyond torchvision: coordinates are clamped to +-2^40 before truncation (torchvision would
// overflow or allocate a mask that size), and a NaN coordinate pastes nothing.
template <typename B>
MRCNN_HOST_DEVICE PasteWindow paste_window(const B* box, B scale, int64_t height, int64_t width) {
  const B half = static_cast<B>(0.5);
  const B w_half = mul_rounded(mul_rounded(box[2] - box[0], half), scale);
  const B h_half = mul_rounded(mul_rounded(box[3] - box[1], half), scale);
  const B x_c = mul_rounded(box[2] + box[0], half);
  const B y_c = mul_rounded(box[3] + box[1], half);
  const B e[4] = {x_c - w_half, y_c - h_half, x_c + w_half, y_c + h_half};
  PasteWindow win{0, 0, 1, 1, 0, 0, 0, 0};
  int64_t b[4];
  const B limit = static_cast<B>(int64_t{1} << 40);
  for (int i = 0; i < 4; ++i) {
    if (!(e[i] == e[i])) return win;  // NaN: an empty window
    b[i] = static_cast<int64_t>(min_of(max_of(e[i], -limit), limit));
  }
  win.x0 = b[0];
  win.y0 = b[1];
  win.w = max_of(b[2] - b[0] + 1, int64_t{1});
  win.h = max_of(b[3] - b[1] + 1, int64_t{1});
  // The window torchvision copies: [max(x1, 0), min(x2 + 1, W)). Its slices clamp a start
  // beyond the end to an empty range (or fail on a shape mismatch for boxes entirely outside
  // the image); here such windows are simply empty.
  win.x_begin = max_of(b[0], int64_t{0});
  win.x_end = min_of(b[2] + 1, width);
  win.y_begin = max_of(b[1], int64_t{0});
  win.y_end = min_of(b[3] + 1, height);
  return win;
}

// One output index of a linear resize from in_size to out_size with align_corners=False:
// the two source indices and their weights, as ATen's CPU upsample kernels compute them
// (area_pixel_compute_scale / _source_index, guard_index_and_lambda).
template <typename T>
struct LinearTap {
  int64_t i0, i1;
  T l0, l1;
};

template <typename T>
MRCNN_HOST_DEVICE LinearTap<T> linear_tap(int64_t out_index, int64_t in_size, int64_t out_size) {
  LinearTap<T> t;
  if (in_size == out_size) {  // ATen copies in this case
    t.i0 = t.i1 = out_index;
    t.l0 = static_cast<T>(1);
    t.l1 = static_cast<T>(0);
    return t;
  }
  const T ratio = static_cast<T>(in_size) / static_cast<T>(out_size);
  T src = mul_rounded(ratio, static_cast<T>(out_index) + static_cast<T>(0.5)) - static_cast<T>(0.5);
  if (src < static_cast<T>(0)) src = static_cast<T>(0);
  t.i0 = min_of(static_cast<int64_t>(floor_of(src)), in_size - 1);
  t.l1 = min_of(max_of(src - static_cast<T>(t.i0), static_cast<T>(0)), static_cast<T>(1));
  t.i1 = t.i0 + (t.i0 < in_size - 1 ? 1 : 0);
  t.l0 = static_cast<T>(1.) - t.l1;
  return t;
}

// The resampled value from the rows r0 (tap row.i0) and r1 (row.i1) of the padded mask: the
// horizontal blends first, then the vertical one, ATen's order.
template <typename T>
MRCNN_HOST_DEVICE T blend(const T* r0, const T* r1, const LinearTap<T>& col,
                          const LinearTap<T>& row) {
  return (r0[col.i0] * col.l0 + r0[col.i1] * col.l1) * row.l0 +
         (r1[col.i0] * col.l0 + r1[col.i1] * col.l1) * row.l1;
}

// Input checks shared by the kernels. Returns the masks' side M.
inline int64_t check_paste_masks_args(const char* op, const at::Tensor& masks,
                                      const at::Tensor& boxes, int64_t height, int64_t width,
                                      int64_t padding) {
  TORCH_CHECK((masks.dim() == 3 || (masks.dim() == 4 && masks.size(1) == 1)), op,
              ": masks must be [N, M, M] or [N, 1, M, M], got ", masks.sizes());
  const int64_t m = masks.size(-1);
  TORCH_CHECK(masks.size(-2) == m && m > 0, op,
              ": masks must be square and non-empty (M x M), got ", masks.sizes());
  TORCH_CHECK(at::isFloatingType(masks.scalar_type()), op, ": masks must be floating point, got ",
              masks.scalar_type());
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, op,
              ": boxes must be a [N, 4] tensor of (x1, y1, x2, y2), got ", boxes.sizes());
  TORCH_CHECK(boxes.scalar_type() == at::kFloat || boxes.scalar_type() == at::kDouble, op,
              ": boxes must be float or double, got ", boxes.scalar_type());
  TORCH_CHECK(boxes.size(0) == masks.size(0), op, ": one box per mask: ", masks.size(0), " masks, ",
              boxes.size(0), " boxes");
  TORCH_CHECK(masks.device() == boxes.device(), op, ": masks (", masks.device(), ") and boxes (",
              boxes.device(), ") must be on the same device");
  TORCH_CHECK(height >= 0 && width >= 0, op, ": the image size must not be negative, got ", height,
              "x", width);
  TORCH_CHECK(padding >= 0, op, ": padding must not be negative, got ", padding);
  return m;
}

// torchvision's expand_masks scale, a Python float.
inline double paste_scale(int64_t m, int64_t padding) {
  return static_cast<double>(m + 2 * padding) / static_cast<double>(m);
}

}  // namespace mrcnn::ops::detail
