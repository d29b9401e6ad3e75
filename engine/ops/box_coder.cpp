// Declares mrcnn::encode_boxes and mrcnn::decode_boxes (the two directions of one coder);
// kernels in cpu/box_coder_kernel.cpp and cuda/box_coder_kernel.cu.
#include "engine/ops/box_coder.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace mrcnn::ops {

at::Tensor encode_boxes(const at::Tensor& reference_boxes, const at::Tensor& proposals,
                        const BoxCoderWeights& weights) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::encode_boxes", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, double,
                                               double, double)>();
  return op.call(reference_boxes, proposals, weights.wx, weights.wy, weights.ww, weights.wh);
}

at::Tensor decode_boxes(const at::Tensor& rel_codes, const at::Tensor& boxes,
                        const BoxCoderWeights& weights, double bbox_xform_clip) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("mrcnn::decode_boxes", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, double,
                                               double, double, double)>();
  return op.call(rel_codes, boxes, weights.wx, weights.wy, weights.ww, weights.wh, bbox_xform_clip);
}

}  // namespace mrcnn::ops

TORCH_LIBRARY_FRAGMENT(mrcnn, m) {
  m.def(
      "encode_boxes(Tensor reference_boxes, Tensor proposals, float wx, float wy, float ww, "
      "float wh) -> Tensor");
  m.def(
      "decode_boxes(Tensor rel_codes, Tensor boxes, float wx, float wy, float ww, float wh, "
      "float bbox_xform_clip) -> Tensor");
}
