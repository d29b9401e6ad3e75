#include "engine/setup/model_config.h"

namespace mrcnn::engine {

model::MaskRCNNOptions modelOptionsFromSpec(const spec::Experiment& spec,
                                            const spec::Resolved& resolved) {
  const auto& m = spec.maskrcnn_config();
  model::MaskRCNNOptions o;

  o.layout = model::parseActivationLayout(spec.memory_format()).value_or(o.layout);
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

  model::RoIHeadsSpecFields heads;
  heads.num_classes = spec.data_config().num_classes();
  heads.fg_thresh = m.fg_thresh();
  heads.bg_thresh_hi = m.bg_thresh_hi();
  heads.bg_thresh_lo = m.bg_thresh_lo();
  heads.batch_size_per_im = m.batch_size_per_im();
  heads.fg_fraction = m.fg_fraction();
  heads.fast_rcnn_mlp_head_dim = m.fast_rcnn_mlp_head_dim();
  heads.bbox_reg_weights = resolved.bbox_reg_weights;
  heads.fast_rcnn_box_loss_weight = m.fast_rcnn_box_loss_weight();
  heads.mrcnn_weight_loss_mask = m.mrcnn_weight_loss_mask();
  heads.include_mask = m.include_mask();
  heads.mrcnn_resolution = m.mrcnn_resolution();
  heads.mask_head_layers = resolved.mask_head_layers;
  heads.min_level = m.min_level();
  heads.max_level = m.max_level();
  heads.test_detections_per_image = m.test_detections_per_image();
  heads.test_nms = m.test_nms();
  heads.test_score_thresh = m.test_score_thresh();
  o.roi_heads = model::toRoIHeadsOptions(heads);
  o.roi_heads.in_channels = o.backbone.out_channels;
  return o;
}

InputOptions inputOptionsFromSpec(const spec::Experiment& s, const spec::Resolved& resolved) {
  InputOptions input;
  const auto& d = s.data_config();
  input.resize.mode = d.resize_mode() == "shorter_side" ? dataset::ResizeMode::kShorterSide
                                                        : dataset::ResizeMode::kFixed;
  input.resize.canvas_height = resolved.image_height;
  input.resize.canvas_width = resolved.image_width;
  input.resize.min_size = static_cast<int>(d.min_size());
  input.resize.max_size = static_cast<int>(d.max_size());
  input.pad_multiple = input.resize.mode == dataset::ResizeMode::kShorterSide
                           ? static_cast<int>(d.size_divisibility())
                           : 1 << s.maskrcnn_config().max_level();
  return input;
}

TileOptions tileOptionsFromSpec(const spec::Experiment& s) {
  const auto& d = s.data_config();
  TileOptions tile;
  tile.size = static_cast<int>(d.tile_size());
  tile.overlap = d.tile_overlap();
  tile.full_image = d.tile_full();
  tile.merge = d.tile_merge() == "nms" ? TileMerge::kNms : TileMerge::kNmm;
  return tile;
}

exporter::OnnxExportOptions onnxExportOptions(const spec::Experiment& s,
                                              const spec::Resolved& resolved,
                                              const std::vector<Category>& categories) {
  exporter::OnnxExportOptions o;
  const InputOptions input = inputOptionsFromSpec(s, resolved);
  o.resize = input.resize;
  o.pad_multiple = input.pad_multiple;
  std::string labels;
  for (const Category& c : categories) {
    o.category_ids.push_back(c.id);
    labels += c.name + "\n";
  }
  o.producer_version = MRCNN_VERSION;
  o.metadata = {{"labels", labels}};
  return o;
}

}  // namespace mrcnn::engine
