// The experiment spec: loading a protobuf-text file (TAO MaskRCNN specs unmodified),
// command-line overrides, defaults, validation, and the decoded values of TAO's
// string-encoded lists. Every problem is reported with its file, line and column, all
// of them at once.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specs/experiment.pb.h"

namespace mrcnn::spec {

struct Diagnostic {
  enum class Kind { Io, Syntax, UnknownField, Type, Semantic, Warning };
  Kind kind = Kind::Semantic;
  std::string origin;  // the spec file's path, or "--set" for a command-line override
  int line = 0;        // 1-based; 0 when the problem has no place in the file
  int column = 0;      // 1-based
  std::string field;   // dotted path such as "maskrcnn_config.nlayers"; may be empty
  std::string message;
  // A requirement of training only (training data, a step count): other tasks drop it.
  bool training_only = false;

  bool isError() const { return kind != Kind::Warning; }
  // "file:line:column: error: field: message", as compilers print it.
  std::string format() const;
};

// Values decoded from TAO's string fields, and paths made absolute.
struct Resolved {
  int image_height = 0;
  int image_width = 0;
  std::vector<long long> learning_rate_steps;
  std::vector<double> learning_rate_decay_levels;
  std::vector<std::pair<double, double>> aspect_ratios;
  std::array<double, 4> bbox_reg_weights{};
  std::vector<int> freeze_blocks;
  std::vector<int64_t> mask_head_layers;  // maskrcnn_config.mask_head_layers

  std::filesystem::path spec_dir;  // relative paths in the spec are taken from here
  std::filesystem::path output_dir;
  std::string run_name;
  std::filesystem::path train_image_dir, train_json_file;
  std::filesystem::path val_image_dir, val_json_file;
  std::filesystem::path shapes_root;  // empty unless data_config.shapes_dataset is given
};

struct LoadedSpec {
  Experiment spec;  // as written, overrides applied; absent fields read as their defaults
  Resolved resolved;
  std::vector<Diagnostic> diagnostics;  // errors and warnings, in file order

  bool ok() const;
  // Removes the diagnostics that concern training only (for inference, evaluate...).
  void dropTrainingRequirements();
  std::vector<Diagnostic> errors() const;
  std::vector<Diagnostic> warnings() const;
};

// `overrides` are `path.to.field=value` assignments (the command line's --set), applied
// after the file and validated like it.
LoadedSpec loadSpecFile(const std::filesystem::path& path,
                        const std::vector<std::string>& overrides = {});
// `origin` names the text in messages; `spec_dir` anchors its relative paths.
LoadedSpec loadSpecText(std::string_view text, const std::string& origin,
                        const std::filesystem::path& spec_dir,
                        const std::vector<std::string>& overrides = {});

// The spec as protobuf text with every field present, defaults filled in and marked.
// It parses back to the same settings.
std::string printResolved(const Experiment& spec);

// Sets every absent singular field of `spec`, data_config and maskrcnn_config to its default.
void fillDefaults(Experiment* spec);

// Makes the spec's file, folder and glob fields absolute, relative ones taken from `spec_dir`
// (defaults of the messages present included), so that a copy of the spec kept elsewhere,
// such as the spec as run in a run directory, still names the same files.
void anchorPaths(Experiment* spec, const std::filesystem::path& spec_dir);

}  // namespace mrcnn::spec
