// CPU kernels of mrcnn::paste_masks and mrcnn::paste_masks_binary.
//
// A first pass (parallel over masks) computes each mask's window in the image and the
// resampling taps of its rows and columns inside the image; the second (parallel over all
// output rows of all masks) writes every output pixel once: zero outside the window, the
// blend of four padded-mask pixels inside.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "engine/ops/paste_masks_geometry.h"

namespace mrcnn::ops::cpu {
namespace {

using detail::LinearTap;
using detail::PasteWindow;

std::vector<PasteWindow> windows_of(const at::Tensor& boxes, double scale, int64_t height,
                                    int64_t width) {
  const at::Tensor b = boxes.contiguous();
  std::vector<PasteWindow> windows(static_cast<size_t>(b.size(0)));
  AT_DISPATCH_FLOATING_TYPES(b.scalar_type(), "paste_masks_windows", [&] {
    const scalar_t* p = b.const_data_ptr<scalar_t>();
    const auto s = static_cast<scalar_t>(scale);
    for (size_t n = 0; n < windows.size(); ++n) {
      windows[n] = detail::paste_window(p + n * 4, s, height, width);
    }
  });
  return windows;
}

// Out is T (probabilities) or uint8_t (thresholded).
template <typename T, typename Out>
void paste_impl(const T* padded, int64_t side, const std::vector<PasteWindow>& windows,
                int64_t height, int64_t width, T threshold, Out* out) {
  const auto n_masks = static_cast<int64_t>(windows.size());
  // Taps of each mask's rows and columns inside the image, one flat array each.
  std::vector<int64_t> row_offset(windows.size() + 1, 0), col_offset(windows.size() + 1, 0);
  for (int64_t n = 0; n < n_masks; ++n) {
    const PasteWindow& w = windows[n];
    const bool empty = w.empty();
    row_offset[n + 1] = row_offset[n] + (empty ? 0 : w.y_end - w.y_begin);
    col_offset[n + 1] = col_offset[n] + (empty ? 0 : w.x_end - w.x_begin);
  }
  std::vector<LinearTap<T>> row_taps(static_cast<size_t>(row_offset.back()));
  std::vector<LinearTap<T>> col_taps(static_cast<size_t>(col_offset.back()));
  at::parallel_for(0, n_masks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const PasteWindow& w = windows[n];
      if (w.empty()) continue;
      for (int64_t y = w.y_begin; y < w.y_end; ++y)
        row_taps[row_offset[n] + y - w.y_begin] = detail::linear_tap<T>(y - w.y0, side, w.h);
      for (int64_t x = w.x_begin; x < w.x_end; ++x)
        col_taps[col_offset[n] + x - w.x_begin] = detail::linear_tap<T>(x - w.x0, side, w.w);
    }
  });

  const int64_t plane = side * side;
  // A few rows per task: one row of a large image is already thousands of pixels.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1));
  at::parallel_for(0, n_masks * height, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / height;
      const int64_t y = r % height;
      const PasteWindow& w = windows[n];
      Out* o = out + r * width;
      if (w.empty() || y < w.y_begin || y >= w.y_end) {
        std::memset(o, 0, sizeof(Out) * width);
        continue;
      }
      std::memset(o, 0, sizeof(Out) * w.x_begin);
      std::memset(o + w.x_end, 0, sizeof(Out) * (width - w.x_end));
      const LinearTap<T> row = row_taps[row_offset[n] + y - w.y_begin];
      const T* r0 = padded + n * plane + row.i0 * side;
      const T* r1 = padded + n * plane + row.i1 * side;
      const LinearTap<T>* cols = col_taps.data() + col_offset[n];
      for (int64_t x = w.x_begin; x < w.x_end; ++x) {
        const T v = detail::blend(r0, r1, cols[x - w.x_begin], row);
        if constexpr (std::is_same_v<Out, uint8_t>) {
          o[x] = v > threshold ? 1 : 0;
        } else {
          o[x] = v;
        }
      }
    }
  });
}

at::Tensor paste_cpu(const char* op, const at::Tensor& masks, const at::Tensor& boxes,
                     int64_t height, int64_t width, int64_t padding,
                     std::optional<double> threshold) {
  const int64_t m = detail::check_paste_masks_args(op, masks, boxes, height, width, padding);
  TORCH_CHECK(masks.is_cpu(), op, ": the CPU kernel got a ", masks.device(), " tensor");
  const int64_t n = masks.size(0);
  at::Tensor probs = masks.reshape({n, m, m});
  if (probs.scalar_type() == at::kHalf || probs.scalar_type() == at::kBFloat16) {
    probs = probs.to(at::kFloat);
  }
  at::Tensor out = at::empty({n, height, width},
                             probs.options().dtype(threshold ? at::kByte : probs.scalar_type()));
  if (out.numel() == 0) return out;

  // torchvision's expand_masks: `padding` zeros around each mask.
  const at::Tensor padded =
      at::constant_pad_nd(probs, {padding, padding, padding, padding}, 0).contiguous();
  const std::vector<PasteWindow> windows =
      windows_of(boxes, detail::paste_scale(m, padding), height, width);
  AT_DISPATCH_FLOATING_TYPES(padded.scalar_type(), "paste_masks_cpu", [&] {
    const scalar_t* p = padded.const_data_ptr<scalar_t>();
    const int64_t side = m + 2 * padding;
    if (threshold) {
      paste_impl<scalar_t, uint8_t>(p, side, windows, height, width,
                                    static_cast<scalar_t>(*threshold),
                                    out.mutable_data_ptr<uint8_t>());
    } else {
      paste_impl<scalar_t, scalar_t>(p, side, windows, height, width, scalar_t(0),
                                     out.mutable_data_ptr<scalar_t>());
    }
  });
  return out;
}

at::Tensor paste_masks_cpu(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                           int64_t width, int64_t padding) {
  return paste_cpu("paste_masks", masks, boxes, height, width, padding, std::nullopt);
}

at::Tensor paste_masks_binary_cpu(const at::Tensor& masks, const at::Tensor& boxes, int64_t height,
                                  int64_t width, double threshold, int64_t padding) {
  return paste_cpu("paste_masks_binary", masks, boxes, height, width, padding, threshold);
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("paste_masks", TORCH_FN(mrcnn::ops::cpu::paste_masks_cpu));
  m.impl("paste_masks_binary", TORCH_FN(mrcnn::ops::cpu::paste_masks_binary_cpu));
}
