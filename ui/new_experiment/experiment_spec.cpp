#include "ui/new_experiment/experiment_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <sstream>

#include "io/atomic_file.h"

namespace mrcnn::ui {
namespace {

namespace fs = std::filesystem;

// A protobuf-text string literal.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string pair(const std::pair<double, double>& p) {
  char text[64];
  std::snprintf(text, sizeof text, "(%.2f, %.2f)", p.first, p.second);
  return text;
}

// `path` relative to `base` when it lies under it (the experiment folder moves as a whole),
// else absolute.
std::string relativeTo(const fs::path& path, const fs::path& base) {
  const fs::path absolute = fs::absolute(path).lexically_normal();
  const fs::path relative = absolute.lexically_relative(fs::absolute(base).lexically_normal());
  if (!relative.empty() && *relative.begin() != "..") return relative.generic_string();
  return absolute.generic_string();
}

// "1 step", "2 steps".
std::string counted(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + ' ' + (n == 1 ? one : many);
}

// The format as its users name it.
std::string formatName(const std::string& format) {
  if (format == "labelme") return "LabelMe";
  if (format == "voc") return "VOC";
  if (format == "cvat") return "CVAT";
  if (format == "yolo") return "YOLO-seg";
  if (format == "coco") return "COCO";
  return format;
}

std::string startComment(const ExperimentChoices& c) {
  using Start = ExperimentChoices::Start;
  switch (c.start) {
    case Start::Scratch:
      return "# Trained from scratch: every weight starts at its initial value.";
    case Start::ImageNet:
      return "# The backbone starts from ImageNet weights by name (downloaded once into the "
             "user's\n# cache); the FPN, the RPN and the heads from their initial values.";
    case Start::Coco:
      return "# Fine-tuned from torchvision's COCO Mask R-CNN by name: every weight but the "
             "class-\n# dependent ones (box predictor, mask logits) starts from COCO.";
    case Start::File:
      return "# Weights from a file (ours, or a torchvision state_dict).";
  }
  return {};
}

}  // namespace

Schedule scheduleFor(int64_t train_images, int epochs, int batch_size) {
  Schedule s;
  batch_size = std::max(1, batch_size);
  epochs = std::max(1, epochs);
  s.steps_per_epoch =
      static_cast<int>(std::max<int64_t>(1, (train_images + batch_size - 1) / batch_size));
  s.total_steps = s.steps_per_epoch * epochs;
  // About ten evaluations in a run, whole epochs apart.
  s.steps_per_eval = s.steps_per_epoch * std::max(1, epochs / 10);
  s.warmup_steps = std::clamp(s.total_steps / 10, 1, 1000);
  if (s.total_steps >= 9) {
    const int first = s.total_steps * 2 / 3, second = s.total_steps * 8 / 9;
    if (first > s.warmup_steps && second > first && second < s.total_steps)
      s.decay_steps = {first, second};
  }
  // The linear scaling rule from detectron2's and TAO's 0.02 for 16 images a step.
  s.learning_rate = 0.02 * batch_size / 16.0;
  return s;
}

std::string experimentSpecText(const ImportedData& data, const ExperimentChoices& c) {
  using Start = ExperimentChoices::Start;
  const fs::path spec_dir = c.spec_path.parent_path();
  const auto& summary = data.summary;
  const Schedule s = scheduleFor(data.train_images, c.epochs, c.batch_size);
  const bool coco = c.start == Start::Coco;
  const bool pretrained = c.start != Start::Scratch;
  const bool add_pair = c.add_suggested_anchor && !coco && data.suggested_pair.has_value();
  std::ostringstream o;

  o << "# Mask R-CNN with a ResNet-" << c.depth << " FPN backbone on the "
    << formatName(summary.format) << " data set\n#   "
    << fs::absolute(summary.input).generic_string() << "\n# imported into "
    << relativeTo(data.dataset_dir, spec_dir)
    << "/ (its import_report.json lists what was changed or left out).\n"
    << "# Written by the New Experiment wizard; relative paths are taken from this file's "
       "folder.\n#\n"
    << "# Classes (the model's label: the category, as the import numbered them):\n";
  for (size_t i = 0; i < summary.categories.size(); ++i)
    o << "#   " << i + 1 << " " << summary.categories[i] << '\n';
  o << "#\n#   mrcnn-workbench --headless " << c.spec_path.filename().string() << "\n\n";

  o << "seed: 123\ndevice: \"auto\"\noutput_dir: \"runs\"\n" << startComment(c) << '\n';
  const std::string checkpoint = c.start == Start::File
                                     ? relativeTo(c.weights, spec_dir)
                                     : (c.start == Start::Scratch ? std::string() : c.weights);
  o << "checkpoint: " << quoted(checkpoint) << "\n\n";

  o << "# " << counted(c.epochs, "epoch", "epochs") << " of "
    << counted(data.train_images, "training image", "training images") << ", " << c.batch_size
    << " a step: " << counted(s.steps_per_epoch, "step", "steps") << " an epoch\n"
    << "total_steps: " << s.total_steps << "\ntrain_batch_size: " << c.batch_size
    << "\neval_batch_size: " << c.batch_size
    << "\n# 0.02 for 16 images a step, scaled linearly to the batch\n"
    << "init_learning_rate: " << number(s.learning_rate)
    << "\nwarmup_learning_rate: " << number(s.learning_rate / 10)
    << "\nwarmup_steps: " << s.warmup_steps << '\n';
  if (!s.decay_steps.empty()) {
    o << "learning_rate_steps: \"[" << s.decay_steps[0] << ", " << s.decay_steps[1]
      << "]\"\nlearning_rate_decay_levels: \"[0.1, 0.01]\"\n";
  }
  o << "momentum: 0.9\nl2_weight_decay: 0.0001\n"
    << "# evaluate and write a checkpoint every "
    << (s.steps_per_eval == s.steps_per_epoch
            ? std::string("epoch")
            : counted(s.steps_per_eval / s.steps_per_epoch, "epoch", "epochs"))
    << "\nnum_steps_per_eval: " << s.steps_per_eval
    << "\nsave_checkpoints_steps: " << s.steps_per_eval
    << "\nkeep_checkpoint_max: 3\nlogging_frequency: 10\n\n";

  o << "data_config {\n";
  const std::string image_dir = relativeTo(data.dataset_dir, spec_dir);
  o << "  train_json_file: " << quoted(relativeTo(data.train_json, spec_dir))
    << "\n  train_image_dir: " << quoted(image_dir) << '\n';
  if (!data.val_json.empty()) {
    o << "  val_json_file: " << quoted(relativeTo(data.val_json, spec_dir))
      << "\n  val_image_dir: " << quoted(image_dir) << '\n';
  } else {
    o << "  # The import wrote no validation split: evaluation needs val_json_file and "
         "val_image_dir.\n";
  }
  o << "  # background + " << summary.categories.size()
    << " classes\n  num_classes: " << summary.categories.size() + 1 << '\n';
  o << "  # the training images' median size, fitted into TAO's 832x1344 and rounded up to "
       "multiples\n  # of 64 (2^max_level)\n  image_size: \"("
    << data.image_height << ", " << data.image_width << ")\"\n  resize_mode: \"fixed\"\n"
    << "  augment_input_data: True\n  skip_crowd_during_training: True\n";
  if (data.val_images > 500) o << "  # at most 500 validation images an evaluation\n";
  o << "  eval_samples: " << (data.val_images > 500 ? 500 : 0)
    << "\n  n_workers: 2\n  max_num_instances: 200\n}\n\n";

  o << "maskrcnn_config {\n  arch: \"resnet\"\n  nlayers: " << c.depth << '\n';
  if (pretrained) {
    o << "  # pretrained: frozen batch norms, the stem and the first stage kept as they are\n"
      << "  freeze_bn: True\n  freeze_blocks: \"[0, 1]\"\n";
  } else {
    o << "  # from scratch: nothing to freeze\n  freeze_bn: False\n  freeze_blocks: \"[]\"\n";
  }
  o << "  min_level: 2\n  max_level: 6\n  num_scales: 1\n  anchor_scale: 8\n";
  if (coco) {
    o << "  # torchvision's anchors and batch-norm epsilon, which the COCO weights were trained "
         "with\n  anchor_style: \"torchvision\"\n  frozen_bn_eps: 0.0\n";
    if (data.suggested_pair) {
      o << "  # (the dataset check suggests the aspect pair " << pair(*data.suggested_pair)
        << "; the COCO RPN head has torchvision's three)\n";
    }
  } else if (add_pair) {
    const auto* train = data.trainStats();
    o << "  # the dataset check: the default anchors reach the positive IoU on "
      << std::lround(train->anchors.share_all * 100) << " % of the\n  # training boxes, "
      << std::lround(train->anchors.share_with_suggestion * 100) << " % with "
      << pair(*data.suggested_pair) << " added\n"
      << "  aspect_ratios: \"[(1.0, 1.0), (1.4, 0.7), (0.7, 1.4), " << pair(*data.suggested_pair)
      << "]\"\n";
  } else {
    o << "  aspect_ratios: \"[(1.0, 1.0), (1.4, 0.7), (0.7, 1.4)]\"\n";
  }
  o << "  include_mask: True\n}\n";
  return o.str();
}

std::vector<std::string> experimentSpecErrors(const std::string& text, const fs::path& spec_path) {
  const spec::LoadedSpec loaded =
      spec::loadSpecText(text, spec_path.string(), spec_path.parent_path());
  std::vector<std::string> out;
  for (const spec::Diagnostic& d : loaded.errors())
    out.push_back(d.format());
  return out;
}

std::vector<std::string> writeExperimentSpec(const ImportedData& data,
                                             const ExperimentChoices& choices) {
  const std::string text = experimentSpecText(data, choices);
  std::vector<std::string> errors = experimentSpecErrors(text, choices.spec_path);
  if (!errors.empty()) return errors;
  try {
    io::writeFileAtomic(choices.spec_path, text);
  } catch (const std::exception& e) {
    return {e.what()};
  }
  return {};
}

}  // namespace mrcnn::ui
