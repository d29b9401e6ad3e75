#include "engine/train/resume_changes.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <map>
#include <set>

#include "specs/spec.h"

namespace mrcnn::train {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;

// Where the run is, not how it trains: the run directory is given when resuming.
const std::set<std::string> kPlace = {"output_dir", "run_name"};

std::string valueText(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  std::string out;
  if (!f->is_repeated()) {
    TextFormat::PrintFieldValueToString(m, f, -1, &out);
    return out;
  }
  out = "[";
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    std::string item;
    TextFormat::PrintFieldValueToString(m, f, i, &item);
    out += (i ? ", " : "") + item;
  }
  return out + "]";
}

void compare(const Message& a, const Message& b, const std::string& prefix,
             std::vector<SpecChange>& out) {
  const google::protobuf::Descriptor* d = a.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    if (prefix.empty() && kPlace.count(f->name())) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_repeated()) {
      // An absent block reads as its defaults.
      compare(a.GetReflection()->GetMessage(a, f), b.GetReflection()->GetMessage(b, f), path + ".",
              out);
      continue;
    }
    const std::string before = valueText(a, f), after = valueText(b, f);
    if (before != after) out.push_back({path, before, after});
  }
}

// The fields a run going on from its checkpoint cannot take, with the reason.
const std::map<std::string, std::string>& refused() {
  static const std::map<std::string, std::string> reasons = [] {
    std::map<std::string, std::string> r;
    const std::string shape = "the model's shape (the checkpoint's weights would not fit it)";
    for (const char* f : {"arch", "nlayers", "min_level", "max_level", "num_scales", "aspect_ratios",
                          "include_mask", "fast_rcnn_mlp_head_dim", "mask_head_layers"})
      r[std::string("maskrcnn_config.") + f] = shape;
    r["pruned_model_path"] = shape;
    const std::string trainable =
        "the trainable parameters (the optimizer keeps a state for each)";
    r["maskrcnn_config.freeze_blocks"] = trainable;
    r["maskrcnn_config.freeze_bn"] = trainable;
    const std::string classes = "the classes (the class predictors were trained for the run's)";
    r["data_config.num_classes"] = classes;
    r["data_config.shapes_dataset.categories"] = classes;
    return r;
  }();
  return reasons;
}

}  // namespace

std::vector<SpecChange> specChanges(const spec::Experiment& before, const spec::Experiment& after) {
  spec::Experiment a = before, b = after;
  spec::fillDefaults(&a);
  spec::fillDefaults(&b);
  std::vector<SpecChange> out;
  compare(a, b, "", out);
  return out;
}

std::string refusedAtResume(const std::string& field) {
  const auto it = refused().find(field);
  return it == refused().end() ? std::string() : it->second;
}

std::string refusalMessage(const std::string& spec_path, const std::vector<SpecChange>& refused_changes,
                           const std::string& run_dir) {
  std::string m = spec_path + ": cannot resume " + run_dir + " with ";
  m += refused_changes.size() == 1 ? "this change" : "these changes";
  m += " (the run goes on from its checkpoint):";
  for (const SpecChange& c : refused_changes)
    m += "\n  " + c.field + ": " + c.before + " -> " + c.after + " changes " + refusedAtResume(c.field);
  m += "\nStart a new run instead: another --run-dir (or output_dir/run_name), with `checkpoint:` "
       "set to one of " + run_dir + "/checkpoints/model.step-N.pt to start from its weights "
       "where they still fit, or put the run's values back to resume it.";
  return m;
}

}  // namespace mrcnn::train
