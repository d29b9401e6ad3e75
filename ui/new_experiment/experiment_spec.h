// The spec the New Experiment wizard writes: an imported data set (imported_data.h) and the
// start chosen (weights, backbone depth, training length) as protobuf text in the style of
// specs/shapes_resnet18.txt — each derived value with a comment saying where it came from —
// checked by the spec library before anything is written. Qt-free.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "specs/spec.h"
#include "ui/new_experiment/imported_data.h"

namespace mrcnn::ui {

struct ExperimentChoices {
  enum class Start { Scratch, ImageNet, Coco, File };
  Start start = Start::ImageNet;
  // ImageNet and Coco: a catalogue name ("torchvision:resnet50"); File: the weights file.
  std::string weights;
  int depth = 50;  // maskrcnn_config.nlayers: the catalogue entry's depth for named weights
  int epochs = 24;
  int batch_size = 2;
  // Add the dataset check's suggested aspect pair to the anchors (not with COCO Mask R-CNN
  // weights, whose RPN head was trained for torchvision's three anchors).
  bool add_suggested_anchor = true;
  std::filesystem::path spec_path;  // where the spec is written: its folder anchors the paths
};

// The schedule derived from the data size, shown to the user before the spec is written.
struct Schedule {
  int steps_per_epoch = 1;
  int total_steps = 1;
  int steps_per_eval = 1;  // also the checkpoint interval
  int warmup_steps = 1;
  std::vector<int> decay_steps;  // at 2/3 and 8/9 of the run, as detectron2's 1x schedule
  double learning_rate = 0.0025;
};

Schedule scheduleFor(int64_t train_images, int epochs, int batch_size);

// The spec's text. Paths are written relative to the spec's folder when they lie under it.
std::string experimentSpecText(const ImportedData& data, const ExperimentChoices& choices);

// The errors the spec library finds in the text ("file:line:column: error: field: message"),
// empty when it validates.
std::vector<std::string> experimentSpecErrors(const std::string& text,
                                              const std::filesystem::path& spec_path);

// Validates the text and writes it atomically to choices.spec_path; returns the errors
// instead (nothing written), or a write failure naming the path.
std::vector<std::string> writeExperimentSpec(const ImportedData& data,
                                             const ExperimentChoices& choices);

}  // namespace mrcnn::ui
