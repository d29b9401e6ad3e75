// CPU kernel of mrcnn::box_iou, parallel over the rows of the result.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "engine/ops/checks.h"
#include "engine/ops/iou.h"

namespace mrcnn::ops::cpu {
namespace {

at::Tensor box_iou_cpu(const at::Tensor& boxes1, const at::Tensor& boxes2) {
  detail::check_boxes("box_iou", "boxes1", boxes1);
  detail::check_boxes("box_iou", "boxes2", boxes2);
  detail::check_box_pair("box_iou", "boxes1", boxes1, "boxes2", boxes2);
  TORCH_CHECK(boxes1.is_cpu() && boxes2.is_cpu(), "box_iou: the CPU kernel got ", boxes1.device(),
              " and ", boxes2.device(), " tensors");
  if (boxes1.scalar_type() == at::kHalf || boxes1.scalar_type() == at::kBFloat16) {
    return box_iou_cpu(boxes1.to(at::kFloat), boxes2.to(at::kFloat));
  }
  const int64_t n = boxes1.size(0);
  const int64_t m = boxes2.size(0);
  at::Tensor iou = at::empty({n, m}, boxes1.options());
  if (iou.numel() == 0) return iou;
  const at::Tensor a = boxes1.contiguous();
  const at::Tensor b = boxes2.contiguous();
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "box_iou_cpu", [&] {
    const scalar_t* pa = a.const_data_ptr<scalar_t>();
    const scalar_t* pb = b.const_data_ptr<scalar_t>();
    scalar_t* out = iou.mutable_data_ptr<scalar_t>();
    std::vector<scalar_t> area_b(static_cast<size_t>(m));
    for (int64_t j = 0; j < m; ++j)
      area_b[j] = detail::box_area(pb + j * 4);
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(m, 1));
    at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const scalar_t* bi = pa + i * 4;
        const scalar_t area_i = detail::box_area(bi);
        scalar_t* row = out + i * m;
        for (int64_t j = 0; j < m; ++j) {
          row[j] = detail::box_iou_one(bi, area_i, pb + j * 4, area_b[j]);
        }
      }
    });
  });
  return iou;
}

}  // namespace
}  // namespace mrcnn::ops::cpu

TORCH_LIBRARY_IMPL(mrcnn, CPU, m) {
  m.impl("box_iou", TORCH_FN(mrcnn::ops::cpu::box_iou_cpu));
}
