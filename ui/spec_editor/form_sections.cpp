#include "ui/spec_editor/form_sections.h"

#include <QCoreApplication>
#include <QHash>
#include <vector>

namespace mrcnn::ui {
namespace {

struct Section {
  const char* block;
  const char* title;
  std::vector<const char*> fields;
};

const std::vector<Section>& sections() {
  static const std::vector<Section> all = {
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Training length"),
       {"total_steps", "num_epochs", "num_examples_per_epoch", "train_batch_size",
        "gradient_accumulation_steps"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Learning rate"),
       {"init_learning_rate", "warmup_learning_rate", "warmup_steps", "learning_rate_steps",
        "learning_rate_decay_levels"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Optimizer"),
       {"momentum", "l2_weight_decay", "l1_weight_decay", "global_gradient_clip_ratio"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Evaluation and checkpoints"),
       {"num_steps_per_eval", "eval_batch_size", "save_checkpoints_steps", "keep_checkpoint_max",
        "target_bbox_map", "target_segm_map", "visualize_images_summary"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Starting weights"),
       {"checkpoint", "skip_checkpoint_variables", "pruned_model_path"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Device and precision"),
       {"device", "use_amp", "amp_dtype", "memory_format", "use_cuda_graphs", "seed"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Output and logging"),
       {"output_dir", "run_name", "logging_frequency", "report_frequency"}},
      {"",
       QT_TRANSLATE_NOOP("SpecForm", "Data-parallel"),
       {"dist_timeout_seconds", "dist_bucket_mib"}},
      {"data_config",
       QT_TRANSLATE_NOOP("SpecForm", "Datasets"),
       {"train_image_dir", "train_json_file", "val_image_dir", "val_json_file",
        "training_file_pattern", "validation_file_pattern", "num_classes", "category_labels",
        "eval_samples"}},
      {"data_config",
       QT_TRANSLATE_NOOP("SpecForm", "Input size"),
       {"image_size", "resize_mode", "min_size", "max_size", "size_divisibility"}},
      {"data_config",
       QT_TRANSLATE_NOOP("SpecForm", "Loading"),
       {"augment_input_data", "skip_crowd_during_training", "filter_empty_gt", "max_num_instances",
        "repeat_threshold",
        "n_workers", "prefetch_buffer_size", "shuffle_buffer_size"}},
      {"data_config",
       QT_TRANSLATE_NOOP("SpecForm", "Large images"),
       {"tile_size", "tile_overlap", "tile_full", "tile_merge"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Backbone"),
       {"arch", "nlayers", "freeze_blocks", "freeze_bn", "frozen_bn_eps"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Anchors"),
       {"min_level", "max_level", "num_scales", "anchor_scale", "aspect_ratios", "anchor_style"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Region proposals"),
       {"rpn_positive_overlap", "rpn_negative_overlap", "rpn_batch_size_per_im", "rpn_fg_fraction",
        "rpn_min_size", "train_rpn_pre_nms_topn", "train_rpn_post_nms_topn",
        "train_rpn_nms_threshold", "test_rpn_pre_nms_topn", "test_rpn_post_nms_topn",
        "test_rpn_nms_thresh"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Box head"),
       {"batch_size_per_im", "fg_fraction", "fg_thresh", "bg_thresh_hi", "bg_thresh_lo",
        "fast_rcnn_mlp_head_dim", "bbox_reg_weights"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Mask head"),
       {"include_mask", "mrcnn_resolution", "gt_mask_size", "mask_head_layers"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Loss weights"),
       {"rpn_box_loss_weight", "fast_rcnn_box_loss_weight", "mrcnn_weight_loss_mask"}},
      {"maskrcnn_config",
       QT_TRANSLATE_NOOP("SpecForm", "Detections"),
       {"test_detections_per_image", "test_nms", "test_score_thresh"}},
  };
  return all;
}

}  // namespace

QString formSectionOf(const QString& path) {
  const qsizetype dot = path.lastIndexOf(u'.');
  const QString block = dot < 0 ? QString() : path.left(dot);
  const QString name = path.mid(dot + 1);
  bool sectioned = false;
  for (const Section& s : sections()) {
    if (block != QLatin1String(s.block)) continue;
    sectioned = true;
    for (const char* field : s.fields)
      if (name == QLatin1String(field)) return QCoreApplication::translate("SpecForm", s.title);
  }
  return sectioned ? QCoreApplication::translate("SpecForm", "Other") : QString();
}

QStringList formSectionsOf(const QString& block) {
  QStringList out;
  for (const Section& s : sections())
    if (block == QLatin1String(s.block)) out << QCoreApplication::translate("SpecForm", s.title);
  if (!out.isEmpty()) out << QCoreApplication::translate("SpecForm", "Other");
  return out;
}

}  // namespace mrcnn::ui
