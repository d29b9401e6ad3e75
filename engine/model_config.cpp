#include "engine/model_config.h"

namespace mrcnn::engine {

model::MaskRCNNOptions modelOptionsFromSpec(const spec::Experiment& spec,
                                            const spec::Resolved& resolved) {
  const auto& m = spec.maskrcnn_config();
  model::MaskRCNNOptions o;

  o.backbone.resnet.depth = static_cast<int>(m.nlayers());
  o.backbone.resnet.frozen_bn = m.freeze_bn();
  o.backbone.resnet.frozen_bn_eps = m.frozen_bn_eps();
  o.backbone.resnet.freeze_blocks = resolved.freeze_blocks;
  o.backbone.min_level = static_cast<int>(m.min_level());
  o.backbone.max_level = static_cast<int>(m.max_level());
  o.backbone.out_channels = 256;

  if (m.anchor_style() == "torchvision") {
    o.anchors = model::AnchorOptions::torchvision();
  } else {
    o.anchors = model::AnchorOptions::tao(m.min_level(), m.max_level(), m.num_scales(),
                                          m.anchor_scale(), resolved.aspect_ratios);
  }

  model::RPNSpecFields rpn;
  rpn.train_rpn_pre_nms_topn = m.train_rpn_pre_nms_topn();
  rpn.train_rpn_post_nms_topn = m.train_rpn_post_nms_topn();
  rpn.train_rpn_nms_threshold = m.train_rpn_nms_threshold();
  rpn.test_rpn_pre_nms_topn = m.test_rpn_pre_nms_topn();
  rpn.test_rpn_post_nms_topn = m.test_rpn_post_nms_topn();
  rpn.test_rpn_nms_thresh = m.test_rpn_nms_thresh();
  rpn.rpn_positive_overlap = m.rpn_positive_overlap();
  rpn.rpn_negative_overlap = m.rpn_negative_overlap();
  rpn.rpn_batch_size_per_im = m.rpn_batch_size_per_im();
  rpn.rpn_fg_fraction = m.rpn_fg_fraction();
  rpn.rpn_min_size = m.rpn_min_size();
  rpn.rpn_box_loss_weight = m.rpn_box_loss_weight();
  o.rpn = model::toRPNOptions(rpn);

  auto& h = o.roi_heads;
  h.num_classes = spec.data_config().num_classes();
  h.in_channels = o.backbone.out_channels;
  h.min_level = o.backbone.min_level;
  h.max_level = o.backbone.max_level;
  h.box_roi_size = 7;
  h.mask_roi_size = m.mrcnn_resolution() / 2;  // the mask predictor doubles it
  h.representation_size = m.fast_rcnn_mlp_head_dim();
  h.with_masks = m.include_mask();
  h.mask_head_layers = resolved.mask_head_layers;
  h.fg_iou_thresh = m.fg_thresh();
  h.bg_iou_thresh_hi = m.bg_thresh_hi();
  h.bg_iou_thresh_lo = m.bg_thresh_lo();
  h.batch_size_per_image = m.batch_size_per_im();
  h.positive_fraction = m.fg_fraction();
  h.bbox_reg_weights = resolved.bbox_reg_weights;
  h.box_loss_weight = m.fast_rcnn_box_loss_weight();
  h.mask_loss_weight = m.mrcnn_weight_loss_mask();
  h.score_thresh = m.test_score_thresh();
  h.nms_thresh = m.test_nms();
  h.detections_per_image = m.test_detections_per_image();
  return o;
}

}  // namespace mrcnn::engine
