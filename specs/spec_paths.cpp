// The spec's file and folder fields made absolute, for the spec as run (<run dir>/spec.txt):
// that copy lives in another folder than the file it came from, and is read again to resume
// a run or to run inference with its model, so its relative paths must not move with it.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <array>
#include <filesystem>
#include <string>
#include <string_view>

#include "specs/spec.h"

namespace mrcnn::spec {
namespace {

namespace fs = std::filesystem;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Every string field that names a file, a folder or a glob, relative to the spec's folder.
constexpr std::array<std::string_view, 10> kPathFields = {
    "output_dir",
    "checkpoint",
    "pruned_model_path",
    "data_config.training_file_pattern",
    "data_config.validation_file_pattern",
    "data_config.val_json_file",
    "data_config.train_image_dir",
    "data_config.train_json_file",
    "data_config.val_image_dir",
    "data_config.shapes_dataset.root",
};

// Follows `path` through present messages; the field's value (its default when unset) is
// made absolute when it is relative and not empty.
void anchor(Message* message, std::string_view path, const fs::path& spec_dir) {
  const size_t dot = path.find('.');
  const std::string name(path.substr(0, dot));
  const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(name);
  if (field == nullptr) return;
  const auto* reflection = message->GetReflection();
  if (dot != std::string_view::npos) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || !reflection->HasField(*message, field))
      return;  // an absent message: its paths are not used
    anchor(reflection->MutableMessage(message, field), path.substr(dot + 1), spec_dir);
    return;
  }
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) return;
  const std::string value = reflection->GetString(*message, field);
  if (value.empty() || fs::path(value).is_absolute()) return;
  // A name of published weights ("torchvision:resnet50", see validate.cpp) is no path.
  if (path == "checkpoint" && value.rfind("torchvision:", 0) == 0) return;
  reflection->SetString(message, field, (spec_dir / value).lexically_normal().string());
}

}  // namespace

void anchorPaths(Experiment* spec, const std::filesystem::path& spec_dir) {
  const fs::path base = fs::absolute(spec_dir);
  for (const std::string_view path : kPathFields) anchor(spec, path, base);
}

}  // namespace mrcnn::spec
