// The prune task: TAO's channel pruning of the spec's model with its weights (as inference
// picks them), written into a new or empty folder as model.pt (the model's tensors at their
// pruned shapes under "model.", and meta.json with the pruned architecture; the spec's
// pruned_model_path retrains it) and status.json (pruning ratio, parameters, size and GFLOPs
// before and after, every layer's kept filters). The rules are engine/prune/prune_rules.h,
// the plan over the weights engine/prune/prune_plan.h.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "io/json_writer.h"
#include "engine/exit_codes.h"
#include "engine/prune/flop_count.h"
#include "engine/prune/prune_plan.h"
#include "engine/setup/model_config.h"
#include "engine/setup/weights.h"
#include "engine/events/task_report.h"
#include "engine/setup/weights_file.h"
#include "io/staging_dir.h"
#include "engine/tasks/tasks.h"
#include "engine/events/event_writer.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// The model's size and cost.
struct ModelCost {
  int64_t parameters = 0;
  int64_t tensor_bytes = 0;  // every tensor of its state_dict
  double gflops = 0;
};

// The image the cost is counted at: the fixed canvas, or in shorter-side mode a 4:3
// landscape image at min_size (capped by max_size); padded as the model pads it.
std::pair<int64_t, int64_t> costImageSize(const InputOptions& input) {
  int64_t h = input.resize.canvas_height, w = input.resize.canvas_width;
  if (input.resize.mode == dataset::ResizeMode::kShorterSide) {
    h = input.resize.min_size;
    w = std::min<int64_t>(input.resize.max_size, (input.resize.min_size * 4 + 2) / 3);
  }
  const int64_t m = std::max(1, input.pad_multiple);
  return {(h + m - 1) / m * m, (w + m - 1) / m * m};
}

ModelCost costOf(model::MaskRCNNImpl& net, const model::StateDict& state,
                 std::pair<int64_t, int64_t> image, const spec::Experiment& s) {
  ModelCost c;
  c.parameters = prune::parameterCount(state);
  for (const auto& [key, t] : state)
    c.tensor_bytes += static_cast<int64_t>(t.nbytes());
  c.gflops = prune::inferenceGflops(net, image.first, image.second,
                                    s.maskrcnn_config().test_rpn_post_nms_topn(),
                                    s.maskrcnn_config().test_detections_per_image());
  return c;
}

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// Every prunable layer: kept / filters, and its group where it shares one.
std::string layerTable(const prune::PrunePlan& plan) {
  size_t width = 5;
  for (const prune::PrunedLayer& l : plan.layers)
    width = std::max(width, l.name.size());
  std::ostringstream os;
  os << std::left << std::setw(static_cast<int>(width)) << "layer"
     << "   kept / filters  group\n";
  for (const prune::PrunedLayer& l : plan.layers) {
    os << std::left << std::setw(static_cast<int>(width)) << l.name << std::right << std::setw(7)
       << l.kept.size() << " / " << std::left << std::setw(7) << l.filters << "  "
       << (l.group == l.name ? "" : l.group) << (l.excluded ? " (excluded)" : "") << '\n';
  }
  return os.str();
}

void writeOptions(io::JsonWriter& j, const prune::PruneOptions& o) {
  j.key("options").beginObject();
  j.key("pruning_threshold").value(o.threshold);
  j.key("normalizer").value(prune::normalizerName(o.normalizer));
  j.key("equalization_criterion").value(prune::equalizationName(o.equalization));
  j.key("pruning_granularity").value(o.granularity);
  j.key("min_num_filters").value(o.min_filters);
  j.key("excluded_layers").beginArray();
  for (const std::string& name : o.excluded_layers)
    j.value(name);
  j.endArray();
  j.endObject();
}

void writeCost(io::JsonWriter& j, const ModelCost& c, int64_t file_bytes) {
  j.key("param_count").value(c.parameters);
  j.key("size").value(file_bytes);
  j.key("gflops").value(c.gflops);
}

std::string statusJson(const fs::path& weights, const PruneTaskOptions& options,
                       const prune::PrunePlan& plan, const ModelCost& before,
                       const ModelCost& after, int64_t model_bytes,
                       std::pair<int64_t, int64_t> image, const spec::Experiment& s) {
  std::ostringstream os;
  io::JsonWriter j(os);
  j.beginObject();
  j.key("weights").value(weights.string());
  j.key("model").value("model.pt");
  j.key("pruning_ratio")
      .value(static_cast<double>(after.parameters) / static_cast<double>(before.parameters));
  writeCost(j, after, model_bytes);
  j.key("before").beginObject();
  writeCost(j, before, before.tensor_bytes);
  j.endObject();
  j.key("gflops_at").beginObject();
  j.key("image_height").value(image.first);
  j.key("image_width").value(image.second);
  j.key("rois").value(s.maskrcnn_config().test_rpn_post_nms_topn());
  j.key("detections").value(s.maskrcnn_config().test_detections_per_image());
  j.key("note").value(
      "2 FLOPs per multiply-add of the convolutions and matrix products; size before: the "
      "unpruned model's tensors");
  j.endObject();
  writeOptions(j, options.rules);
  j.key("layers").beginArray();
  for (const prune::PrunedLayer& l : plan.layers) {
    j.beginObject();
    j.key("name").value(l.name);
    j.key("group").value(l.group);
    j.key("filters").value(l.filters);
    j.key("kept").value(static_cast<int64_t>(l.kept.size()));
    j.key("excluded").value(l.excluded);
    j.endObject();
  }
  j.endArray();
  j.endObject();
  os << '\n';
  return os.str();
}

// meta.json of model.pt: what the model is, for people and tools (the engine rebuilds it from
// the tensors' shapes).
at::Tensor metaTensor(const fs::path& weights, const model::MaskRCNNOptions& pruned, double ratio) {
  std::ostringstream os;
  io::JsonWriter j(os);
  j.beginObject();
  j.key("format").value("mrcnn-workbench pruned model");
  j.key("version").value(int64_t{1});
  j.key("resnet_depth").value(static_cast<int64_t>(pruned.backbone.resnet.depth));
  j.key("source").value(weights.string());
  j.key("pruning_ratio").value(ratio);
  j.endObject();
  std::string text = os.str();
  // conv_widths as its own object (written by the model's helper).
  text.insert(text.size() - 1, ",\"conv_widths\":" + model::convWidthsJson(pruned.conv_widths));
  at::Tensor t = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::memcpy(t.data_ptr(), text.data(), text.size());
  return t;
}

// Whether `dir` may receive the output: absent, or an empty folder. Else the reason.
std::string outputRefusal(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return {};
  if (!fs::is_directory(dir, ec)) return dir.string() + " exists and is not a folder";
  if (!fs::is_empty(dir, ec))
    return dir.string() +
           " is not empty; a prune writes into a new or empty folder and never "
           "replaces what is there";
  return {};
}

int pruneModel(const TaskOptions& options, const PruneTaskOptions& prune_options,
               const spec::LoadedSpec& loaded, const fs::path& run_dir, bool has_run_dir,
               TaskReport& report) {
  const spec::Experiment& s = loaded.spec;
  const fs::path weights = weightsFile(options.checkpoint, loaded, run_dir, &report);
  if (weights.empty())
    return report.fail("no_checkpoint", "no weights to prune: " + weightsSearched(options.spec_path, run_dir),
                       kExitBadData);
  const fs::path out_dir = fs::absolute(prune_options.output_dir).lexically_normal();
  if (const std::string why = outputRefusal(out_dir); !why.empty())
    return report.fail("output_exists", "--output-dir: " + why, kExitUsage);
  report.write(train::startEvent("prune", options.spec_path.string(),
                                 has_run_dir ? run_dir.string() : std::string(), "cpu", 1, 0, 0,
                                 MRCNN_VERSION));

  const model::MaskRCNNOptions spec_model = modelOptionsFromSpec(s, loaded.resolved);
  model::StateDict original_state;
  model::MaskRCNN original(nullptr);
  try {
    WeightsReport w;
    original = loadModel(spec_model, model::readStateDict(weights), weights.string(), "", &w);
    original_state = original->torchvisionState();
    report.log("weights: " + weights.string() + " (" + w.kind + ", " + std::to_string(w.loaded) +
               " tensors" +
               (w.pruned_widths
                    ? ", already pruned in " + std::to_string(w.pruned_widths) + " layers"
                    : std::string()) +
               ")");
  } catch (const std::exception& e) {
    return report.fail("bad_checkpoint", std::string("checkpoint: ") + e.what(), kExitBadData);
  }

  prune::PrunePlan plan;
  try {
    plan = prune::planPruning(original_state, prune_options.rules);
  } catch (const prune::PruneError& e) {
    const bool excluded = std::string(e.what()).starts_with("excluded layer");
    return report.fail(excluded ? "bad_option" : "bad_checkpoint",
                       excluded ? std::string("--excluded-layers: ") + e.what()
                                : weights.string() + ": " + e.what(),
                       excluded ? kExitUsage : kExitBadData);
  }
  const model::StateDict pruned_state = prune::applyPlan(original_state, plan);
  model::MaskRCNN pruned(nullptr);
  try {
    pruned = loadModel(spec_model, pruned_state, "the pruned weights");
  } catch (const std::exception& e) {
    return report.fail("prune_failed", std::string("the pruned model does not build: ") + e.what(),
                       kExitFailed);
  }
  report.log("kept filters per layer:\n" + layerTable(plan));

  const std::pair<int64_t, int64_t> image = costImageSize(inputOptionsFromSpec(s, loaded.resolved));
  const ModelCost before = costOf(*original, original_state, image, s);
  const ModelCost after = costOf(*pruned, pruned_state, image, s);
  const double ratio =
      static_cast<double>(after.parameters) / static_cast<double>(before.parameters);

  int64_t model_bytes = 0;
  try {
    model::StateDict file;
    for (const auto& [key, t] : pruned_state)
      file.emplace_back("model." + key, t);
    file.emplace_back("meta.json", metaTensor(weights, pruned->options(), ratio));
    io::StagingDir staging(out_dir);
    model::writeStateDict(file, staging.path() / "model.pt");
    model_bytes = static_cast<int64_t>(fs::file_size(staging.path() / "model.pt"));
    io::writeFileAtomic(
        staging.path() / "status.json",
        statusJson(weights, prune_options, plan, before, after, model_bytes, image, s));
    std::error_code ec;
    fs::create_directories(out_dir.parent_path(), ec);
    staging.moveTo(out_dir);
  } catch (const std::exception& e) {
    return report.fail(e, "write_failed", "--output-dir: ", kExitBadData);
  }
  report.write(train::doneEvent(
      "ok",
      "pruned " + weights.filename().string() + " into " + out_dir.string() + ": pruning ratio " +
          fixed(ratio, 3) + " (" + std::to_string(after.parameters) + " of " +
          std::to_string(before.parameters) + " parameters), " + fixed(after.gflops, 1) +
          " GFLOPs from " + fixed(before.gflops, 1) + " at " + std::to_string(image.first) + "x" +
          std::to_string(image.second) + "; retrain it with pruned_model_path: \"" +
          (out_dir / "model.pt").string() + "\"",
      report.elapsed()));
  return kExitOk;
}

}  // namespace

int runPrune(const TaskOptions& options, const PruneTaskOptions& prune_options, std::ostream& out,
             std::ostream& err) {
  const auto entry = TaskEntry("prune").runDirEvents(RunDirEvents::IfExists);
  return runTask(entry, options, out, err, [&](TaskContext& c) {
    return pruneModel(options, prune_options, c.spec(), c.run_dir, c.has_run_dir, c.report);
  });
}

}  // namespace mrcnn::engine
