// Semantic rules of the experiment spec: each names the field and the rule it breaks.
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>

#include "specs/literal.h"
#include "specs/options.pb.h"
#include "specs/spec_internal.h"

namespace mrcnn::spec::internal {
namespace {

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

class Checker {
 public:
  Checker(const LocationMap& locations, std::vector<Diagnostic>* out)
      : locations_(locations), out_(out) {}

  void error(const std::string& field, const std::string& message) {
    report(Diagnostic::Kind::Semantic, field, message, 0);
  }
  // A required setting that is absent (so no default is to blame).
  // A requirement of training (data to train on, a step count).
  void missing(const std::string& field, const std::string& message) {
    const size_t before = out_->size();
    report(Diagnostic::Kind::Semantic, field, message, -1);
    for (size_t i = before; i < out_->size(); ++i)
      (*out_)[i].training_only = true;
  }
  void warning(const std::string& field, const std::string& message) {
    report(Diagnostic::Kind::Warning, field, message, 0);
  }
  // An error inside a string-encoded list, pointing at the character at fault.
  void literalError(const std::string& field, const LiteralError& e, const std::string& what) {
    report(Diagnostic::Kind::Semantic, field, "malformed " + what + ": " + e.message,
           static_cast<int>(e.offset) + 1);
  }
  bool usable(const std::string& field) const { return !locations_.unusable.count(field); }

 private:
  void report(Diagnostic::Kind kind, const std::string& field, std::string message,
              int char_in_value) {
    if (!usable(field)) return;  // already reported as a syntax or type error
    Diagnostic d;
    d.kind = kind;
    d.field = field;
    d.origin = locations_.file_origin;
    const auto it = locations_.fields.find(field);
    if (it != locations_.fields.end()) {
      const FieldLocation& where = it->second;
      d.origin = where.origin;
      d.line = where.line;
      d.column = where.column;
      if (char_in_value > 0) {
        if (where.line > 0 && where.value_column > 0) {
          d.column = where.value_column + char_in_value - 1;
        } else if (where.line == 0) {
          message += " (character " + std::to_string(char_in_value) + " of the value)";
        }
      }
    } else {
      // Not written anywhere: the rule is broken by a default value.
      if (char_in_value >= 0) message += " (the default value)";
      const auto dot = field.rfind('.');
      if (dot != std::string::npos) {
        const auto block = locations_.fields.find(field.substr(0, dot));
        if (block != locations_.fields.end()) {
          d.line = block->second.line;
          d.column = block->second.column;
        }
      }
    }
    d.message = std::move(message);
    out_->push_back(std::move(d));
  }

  const LocationMap& locations_;
  std::vector<Diagnostic>* out_;
};

void requireFraction(Checker& c, const std::string& field, double value) {
  if (!(value >= 0.0 && value <= 1.0)) {
    c.error(field, "must be between 0 and 1, got " + number(value));
  }
}

void requirePositive(Checker& c, const std::string& field, double value) {
  if (!(value > 0)) c.error(field, "must be greater than 0, got " + number(value));
}

void requireChoice(Checker& c, const google::protobuf::Message& message, const std::string& prefix,
                   const std::string& name) {
  const auto* f = message.GetDescriptor()->FindFieldByName(name);
  const std::string choices = f->options().GetExtension(spec::choices);
  const std::string value = message.GetReflection()->GetString(message, f);
  std::string list;
  std::stringstream ss(choices);
  for (std::string item; std::getline(ss, item, '|');) {
    if (item == value) return;
    list += (list.empty() ? "" : ", ") + item;
  }
  c.error(prefix + name, "must be one of " + list + ", got \"" + value + "\"");
}

void checkSchedule(const Experiment& s, Checker& c, Resolved* r) {
  LiteralError e;
  bool steps_ok = false, levels_ok = false;
  if (!decodeIntList(s.learning_rate_steps(), &r->learning_rate_steps, &e)) {
    c.literalError("learning_rate_steps", e, "list of steps");
  } else {
    steps_ok = true;
    for (std::size_t i = 0; i < r->learning_rate_steps.size(); ++i) {
      if (r->learning_rate_steps[i] <= 0 ||
          (i > 0 && r->learning_rate_steps[i] <= r->learning_rate_steps[i - 1])) {
        c.error("learning_rate_steps", "steps must be positive and increasing");
        steps_ok = false;
        break;
      }
    }
  }
  if (!decodeNumberList(s.learning_rate_decay_levels(), &r->learning_rate_decay_levels, &e)) {
    c.literalError("learning_rate_decay_levels", e, "list of decay levels");
  } else {
    levels_ok = true;
    for (double level : r->learning_rate_decay_levels) {
      if (!(level > 0)) {
        c.error("learning_rate_decay_levels", "levels must be greater than 0");
        levels_ok = false;
        break;
      }
    }
  }
  if (steps_ok && levels_ok &&
      r->learning_rate_steps.size() != r->learning_rate_decay_levels.size()) {
    c.error("learning_rate_decay_levels", std::to_string(r->learning_rate_decay_levels.size()) +
                                              " level(s) for " +
                                              std::to_string(r->learning_rate_steps.size()) +
                                              " learning_rate_steps: give one level for each step");
  }

  const bool has_steps = s.has_total_steps() && c.usable("total_steps");
  const bool has_epochs = s.has_num_epochs() && c.usable("num_epochs");
  if (!has_steps && !has_epochs && c.usable("total_steps") && c.usable("num_epochs")) {
    c.missing("total_steps", "neither total_steps nor num_epochs is given: set one of them");
  }
  if (has_steps && s.total_steps() == 0) c.error("total_steps", "must be greater than 0");
  if (has_epochs && s.num_epochs() == 0) c.error("num_epochs", "must be greater than 0");
  if (s.has_num_examples_per_epoch() && s.num_examples_per_epoch() == 0) {
    c.error("num_examples_per_epoch", "must be greater than 0");
  }
  if (has_steps && steps_ok && !r->learning_rate_steps.empty() &&
      r->learning_rate_steps.back() >= static_cast<long long>(s.total_steps())) {
    c.warning("learning_rate_steps",
              "the last decay step " + std::to_string(r->learning_rate_steps.back()) +
                  " is not before total_steps " + std::to_string(s.total_steps()));
  }
  if (has_steps && s.warmup_steps() > s.total_steps()) {
    c.warning("warmup_steps", "is longer than total_steps");
  }

  if (s.train_batch_size() == 0) c.error("train_batch_size", "must be at least 1");
  if (s.eval_batch_size() == 0) c.error("eval_batch_size", "must be at least 1");
  if (s.gradient_accumulation_steps() == 0)
    c.error("gradient_accumulation_steps", "must be at least 1");
  if (s.keep_checkpoint_max() == 0) c.error("keep_checkpoint_max", "must be at least 1");
  if (!(s.momentum() >= 0 && s.momentum() < 1)) {
    c.error("momentum", "must be in [0, 1), got " + number(s.momentum()));
  }
  if (!(s.init_learning_rate() > 0)) c.error("init_learning_rate", "must be greater than 0");
  if (!(s.warmup_learning_rate() >= 0)) c.error("warmup_learning_rate", "must not be negative");
  if (!(s.l2_weight_decay() >= 0)) c.error("l2_weight_decay", "must not be negative");
  if (!(s.l1_weight_decay() >= 0)) c.error("l1_weight_decay", "must not be negative");
  if (!(s.global_gradient_clip_ratio() >= 0)) {
    c.error("global_gradient_clip_ratio", "must not be negative");
  }
  requireFraction(c, "target_bbox_map", s.target_bbox_map());
  requireFraction(c, "target_segm_map", s.target_segm_map());

  static const std::regex device_re("auto|cpu|cuda(:[0-9]+)?");
  if (!std::regex_match(s.device(), device_re)) {
    c.error("device", "must be auto, cpu, cuda or cuda:N, got \"" + s.device() + "\"");
  }
  requireChoice(c, s, "", "amp_dtype");
  requireChoice(c, s, "", "memory_format");
  if (s.use_amp() && s.device() == "cpu" && s.amp_dtype() == "fp16") {
    c.error("amp_dtype", "fp16 mixed precision needs a GPU; use bf16 on the CPU");
  }
  if (s.has_wandb_config()) c.warning("wandb_config", "accepted for TAO compatibility, not used");
  if (s.has_clearml_config())
    c.warning("clearml_config", "accepted for TAO compatibility, not used");
  if (!s.skip_checkpoint_variables().empty()) {
    try {
      std::regex probe(s.skip_checkpoint_variables());
    } catch (const std::regex_error& ex) {
      c.error("skip_checkpoint_variables",
              std::string("not a valid regular expression: ") + ex.what());
    }
  }
  // checkpoint may name published weights instead of a file ("torchvision:resnet50", the
  // catalogue of weights/catalogue.h): they are resolved, and downloaded into the user's
  // cache, when a task starts, which also names the catalogue's names when one is unknown.
  // Only the form is checked here, so that the spec library needs no catalogue.
  static const std::regex weights_name_re("torchvision:[A-Za-z0-9_.-]+");
  if (s.checkpoint().rfind("torchvision:", 0) == 0 &&
      !std::regex_match(s.checkpoint(), weights_name_re)) {
    c.error("checkpoint", "\"" + s.checkpoint() +
                              "\" is not a weights name: torchvision: and a name such as resnet50 "
                              "or maskrcnn_resnet50_fpn");
  }
  if (s.pruned_model_path().rfind("torchvision:", 0) == 0) {
    c.error("pruned_model_path",
            "is a pruned model's file (from the prune task); published weights go in checkpoint");
  }
}

void checkModel(const MaskRCNNConfig& m, Checker& c, Resolved* r) {
  const std::string p = "maskrcnn_config.";
  requireChoice(c, m, p, "arch");
  requireChoice(c, m, p, "anchor_style");
  if (!(m.frozen_bn_eps() >= 0)) c.error(p + "frozen_bn_eps", "must not be negative");
  if (m.mrcnn_resolution() % 2 != 0) {
    c.error(p + "mrcnn_resolution", "must be even: the mask head doubles its RoIAlign features (" +
                                        std::to_string(m.mrcnn_resolution()) + " is odd)");
  }
  if (m.anchor_style() == "torchvision" && (m.min_level() != 2 || m.max_level() != 6)) {
    c.error(p + "anchor_style",
            "torchvision's anchors are made for levels 2 to 6 (min_level 2, max_level 6)");
  }
  static const std::set<unsigned> depths = {10, 18, 34, 50, 101};
  if (!depths.count(m.nlayers())) {
    c.error(p + "nlayers", "unsupported ResNet depth " + std::to_string(m.nlayers()) +
                               "; use 10, 18, 34, 50 or 101");
  }
  LiteralError e;
  std::vector<long long> blocks;
  if (!decodeIntList(m.freeze_blocks(), &blocks, &e)) {
    c.literalError(p + "freeze_blocks", e, "list of blocks");
  } else {
    r->freeze_blocks.clear();
    for (long long b : blocks) {
      if (b < 0 || b > 4) {
        c.error(p + "freeze_blocks",
                "block " + std::to_string(b) + " does not exist: 0 is the stem, 1 to 4 the stages");
        break;
      }
      r->freeze_blocks.push_back(static_cast<int>(b));
    }
  }
  std::vector<long long> widths;
  if (!decodeIntList(m.mask_head_layers(), &widths, &e)) {
    c.literalError(p + "mask_head_layers", e, "list of widths");
  } else if (widths.empty() || std::any_of(widths.begin(), widths.end(),
                                           [](long long w) { return w < 1 || w > 4096; })) {
    c.error(p + "mask_head_layers", "needs at least one width, each in 1..4096");
  } else {
    r->mask_head_layers.assign(widths.begin(), widths.end());
  }
  if (m.min_level() > m.max_level()) {
    c.error(p + "min_level", "min_level " + std::to_string(m.min_level()) +
                                 " is greater than max_level " + std::to_string(m.max_level()));
  } else if (m.min_level() < 2 || m.max_level() > 6) {
    c.error(m.min_level() < 2 ? p + "min_level" : p + "max_level",
            "FPN levels run from 2 (stride 4) to 6 (stride 64)");
  }
  if (m.num_scales() == 0) c.error(p + "num_scales", "must be at least 1");
  requirePositive(c, p + "anchor_scale", m.anchor_scale());

  if (!decodePairList(m.aspect_ratios(), &r->aspect_ratios, &e)) {
    c.literalError(p + "aspect_ratios", e, "list of aspect ratio pairs");
  } else if (r->aspect_ratios.empty()) {
    c.error(p + "aspect_ratios", "needs at least one (width, height) pair");
  } else {
    for (const auto& [w, h] : r->aspect_ratios) {
      if (!(w > 0 && h > 0)) {
        c.error(p + "aspect_ratios", "factors must be greater than 0");
        break;
      }
    }
  }
  std::vector<double> weights;
  if (!decodeNumberList(m.bbox_reg_weights(), &weights, &e)) {
    c.literalError(p + "bbox_reg_weights", e, "box regression weights");
  } else if (weights.size() != 4) {
    c.error(p + "bbox_reg_weights",
            "needs 4 numbers (wx, wy, ww, wh), got " + std::to_string(weights.size()));
  } else if (std::any_of(weights.begin(), weights.end(), [](double w) { return !(w > 0); })) {
    c.error(p + "bbox_reg_weights", "weights must be greater than 0");
  } else {
    std::copy(weights.begin(), weights.end(), r->bbox_reg_weights.begin());
  }

  for (const char* name :
       {"rpn_positive_overlap", "rpn_negative_overlap", "rpn_fg_fraction", "fg_fraction",
        "fg_thresh", "bg_thresh_hi", "bg_thresh_lo", "train_rpn_nms_threshold", "test_nms",
        "test_rpn_nms_thresh", "test_score_thresh"}) {
    const auto* f = m.GetDescriptor()->FindFieldByName(name);
    requireFraction(c, p + name, m.GetReflection()->GetFloat(m, f));
  }
  if (m.rpn_negative_overlap() > m.rpn_positive_overlap()) {
    c.error(p + "rpn_negative_overlap", "is greater than rpn_positive_overlap");
  }
  if (m.bg_thresh_lo() > m.bg_thresh_hi()) {
    c.error(p + "bg_thresh_lo", "is greater than bg_thresh_hi");
  }
  if (!(m.rpn_min_size() >= 0)) c.error(p + "rpn_min_size", "must not be negative");
  for (const char* name :
       {"rpn_batch_size_per_im", "batch_size_per_im", "fast_rcnn_mlp_head_dim", "mrcnn_resolution",
        "gt_mask_size", "train_rpn_pre_nms_topn", "train_rpn_post_nms_topn",
        "test_rpn_pre_nms_topn", "test_rpn_post_nms_topn", "test_detections_per_image"}) {
    const auto* f = m.GetDescriptor()->FindFieldByName(name);
    if (m.GetReflection()->GetUInt32(m, f) == 0) c.error(p + name, "must be at least 1");
  }
  for (const char* name :
       {"rpn_box_loss_weight", "fast_rcnn_box_loss_weight", "mrcnn_weight_loss_mask"}) {
    const auto* f = m.GetDescriptor()->FindFieldByName(name);
    if (!(m.GetReflection()->GetFloat(m, f) >= 0)) c.error(p + name, "must not be negative");
  }
}

void checkData(const Experiment& s, Checker& c, Resolved* r) {
  const DataConfig& d = s.data_config();
  const MaskRCNNConfig& m = s.maskrcnn_config();
  const std::string p = "data_config.";
  if (d.num_classes() < 2) {
    c.error(p + "num_classes", "must be at least 2 (background and one class), got " +
                                   std::to_string(d.num_classes()));
  }
  requireChoice(c, d, p, "resize_mode");
  requireChoice(c, d, p, "category_labels");
  LiteralError e;
  std::vector<long long> size;
  const unsigned stride = 1u << std::min(m.max_level(), 30u);
  if (!decodeIntList(d.image_size(), &size, &e)) {
    c.literalError(p + "image_size", e, "image size");
  } else if (size.size() != 2) {
    c.error(p + "image_size",
            "needs (height, width), got " + std::to_string(size.size()) + " numbers");
  } else {
    r->image_height = static_cast<int>(size[0]);
    r->image_width = static_cast<int>(size[1]);
    if (d.resize_mode() == "fixed") {
      for (long long side : size) {
        if (side < 128) {
          c.error(p + "image_size", "sides must be at least 128, got " + std::to_string(side));
          break;
        }
        if (side % stride != 0) {
          c.error(p + "image_size",
                  "sides must be multiples of 2^max_level = " + std::to_string(stride) + ", got " +
                      std::to_string(side) + " (nearest: " +
                      std::to_string(
                          std::max<long long>(stride, (side + stride / 2) / stride * stride)) +
                      ")");
          break;
        }
      }
    }
  }
  if (d.resize_mode() == "shorter_side") {
    if (d.min_size() < 32) c.error(p + "min_size", "must be at least 32");
    if (d.max_size() < d.min_size()) c.error(p + "max_size", "is smaller than min_size");
    if (d.size_divisibility() == 0) c.error(p + "size_divisibility", "must be at least 1");
  }
  if (d.max_num_instances() == 0) c.error(p + "max_num_instances", "must be at least 1");
  if (!(d.repeat_threshold() >= 0 && d.repeat_threshold() <= 1))
    c.error(p + "repeat_threshold", "must be from 0 (off) to 1, got " + number(d.repeat_threshold()));
  if (d.tile_size() > 0 && d.tile_size() < 32)
    c.error(p + "tile_size", "a tile's side in pixels, at least 32 (0: whole images), got " +
                                 std::to_string(d.tile_size()));
  if (!(d.tile_overlap() >= 0 && d.tile_overlap() < 1))
    c.error(p + "tile_overlap", "the share of a tile its neighbour overlaps, in [0, 1), got " +
                                    number(d.tile_overlap()));
  requireChoice(c, d, p, "tile_merge");

  const bool train_dir = !d.train_image_dir().empty(), train_json = !d.train_json_file().empty();
  if (train_dir != train_json) {
    c.error(train_dir ? p + "train_json_file" : p + "train_image_dir",
            "train_image_dir and train_json_file go together: give both");
  }
  if (!d.val_image_dir().empty() && d.val_json_file().empty()) {
    c.error(p + "val_json_file", "val_image_dir needs val_json_file");
  }
  if (!train_dir && !train_json && d.training_file_pattern().empty() && !d.has_shapes_dataset()) {
    c.missing(p + "training_file_pattern",
              "no training data: give training_file_pattern, train_image_dir with train_json_file, "
              "or shapes_dataset");
  }
  if (d.has_shapes_dataset()) {
    const ShapesDataset& sh = d.shapes_dataset();
    const std::string q = p + "shapes_dataset.";
    if (sh.root().empty()) c.error(q + "root", "must name a folder");
    if (sh.train_images() == 0) c.error(q + "train_images", "must be at least 1");
    if (sh.val_images() == 0) c.error(q + "val_images", "must be at least 1");
    if (sh.min_side() < 64) c.error(q + "min_side", "must be at least 64");
    if (sh.max_side() < sh.min_side()) c.error(q + "max_side", "is smaller than min_side");
    if (sh.max_shapes() == 0) c.error(q + "max_shapes", "must be at least 1");
    if (!(sh.clutter() >= 0 && sh.clutter() <= 10)) c.error(q + "clutter", "must be in 0..10");
    if (sh.categories() < 1 || sh.categories() > 6) {
      c.error(q + "categories", "must be in 1..6");
    } else if (d.num_classes() != sh.categories() + 1) {
      c.warning(p + "num_classes", "the shapes dataset draws " + std::to_string(sh.categories()) +
                                       " shape classes: num_classes " +
                                       std::to_string(sh.categories() + 1) +
                                       " fits it (background + classes)");
    }
    if (sh.min_shape_size() < 4 || sh.min_shape_size() > sh.min_side() / 2) {
      c.error(q + "min_shape_size",
              "must be in 4..min_side/2 (" + std::to_string(sh.min_side() / 2) + ")");
    }
    if (train_dir || !d.training_file_pattern().empty()) {
      c.warning(q + "root", "shapes_dataset replaces the other training data given");
    }
  }
}

}  // namespace

void validate(const Experiment& spec, const LocationMap& locations, Resolved* resolved,
              std::vector<Diagnostic>* out) {
  Checker checker(locations, out);
  checkSchedule(spec, checker, resolved);
  checkModel(spec.maskrcnn_config(), checker, resolved);
  checkData(spec, checker, resolved);
}

}  // namespace mrcnn::spec::internal
