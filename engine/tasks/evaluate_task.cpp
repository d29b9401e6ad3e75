// The evaluate task on a spec: a checkpoint on the spec's validation set (the model run as the
// train task's evaluation runs it, events on stdout and in the run directory, metrics in
// <run dir>/eval/<checkpoint stem>.json), or an exported model through OpenVINO (--backend
// openvino --onnx F: no checkpoint needed, metrics in <run dir>/eval/<F's stem>.openvino.json).
// A results file against annotations, no model, is evaluate_files_task.cpp.
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "eval/evaluator.h"
#include "eval/results_json.h"
#include "engine/exit_codes.h"
#include "engine/setup/data_setup.h"
#include "engine/runtime/task_device.h"
#include "engine/setup/model_config.h"
#include "engine/runtime/precision.h"
#include "engine/setup/weights.h"
#include "engine/setup/backend_setup.h"
#include "engine/events/task_report.h"
#include "engine/setup/data_files.h"
#include "engine/setup/weights_file.h"
#include "engine/tasks/tasks.h"
#include "engine/train/checkpoint.h"
#include "engine/events/event_writer.h"
#include "engine/validation/validator.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string apSummary(const char* name, const eval::EvalResult& r) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << name << " AP " << r.stats[0] << " (AP50 " << r.stats[1] << ", AP75 " << r.stats[2] << ")";
  return o.str();
}

// From the writer's existence on: every outcome is an event.
// A backend on the validation images' files (the first eval_samples of the json), scored as
// the Validator scores the model: the exported model through OpenVINO, or either backend on
// tiles.
int evaluateWithBackend(const TaskOptions& options, const EvaluateOptions& evaluate,
                        const spec::LoadedSpec& loaded, const fs::path& run_dir,
                        const DataFiles& data, const dataset::CocoDataset& gt, model::MaskRCNN net,
                        const fs::path& weights, const std::string& device, TaskReport& report,
                        ValidationResult& v) {
  const spec::Experiment& s = loaded.spec;
  std::error_code ec;
  if (!fs::is_directory(data.val_image_dir, ec)) {
    return report.fail("bad_spec",
                       options.spec_path.string() + ": data_config.val_image_dir: " +
                           (evaluate.tile.size > 0 ? "tiled evaluation" : "the OpenVINO backend") +
                           " reads image files; this validation set has none",
                       kExitBadSpec);
  }
  const std::vector<Category> categories = categoryTable(
      data.val_json, net->numClasses(), s.data_config().category_labels() == "category_id");
  std::unique_ptr<InferenceBackend> backend;
  if (const int code =
          makeBackend(BackendRequest{evaluate.backend, evaluate.onnx, evaluate.tile}, loaded, options.spec_path,
                      device, run_dir, std::move(net), categories, weights, report, backend);
      code != kExitOk) {
    return code;
  }
  report.log("backend: " + backend->description());
  std::vector<fs::path> files;
  std::map<std::string, int64_t> ids;
  const uint32_t limit = s.data_config().eval_samples();
  for (const auto& image : gt.images()) {
    if (limit > 0 && files.size() >= limit) break;
    files.push_back(data.val_image_dir / std::string(image.file_name));
    ids[std::string(image.file_name)] = image.id;
  }
  const auto started = std::chrono::steady_clock::now();
  const BackendRun ran = backend->run(files);
  for (const SkippedImage& bad : ran.skipped) {
    report.warn("unreadable_image", bad.path.string() + ": " + bad.problem + "; skipped");
  }
  std::vector<int64_t> category_ids;
  for (const Category& c : categories)
    category_ids.push_back(c.id);
  v.report = evaluateBackendRun(ran, data.val_image_dir, ids, category_ids, gt,
                                s.maskrcnn_config().include_mask());
  v.report.annotations_file = fs::absolute(data.val_json).string();
  v.report.image_dir = fs::absolute(data.val_image_dir).string();
  v.images = ran.images.size();
  v.seconds = secondsSince(started);
  if (!v.report.bbox) {
    return report.fail("no_readable_image", "none of the validation images could be read",
                       kExitBadData);
  }
  return kExitOk;
}

int evaluateCheckpoint(const TaskOptions& options, const EvaluateOptions& evaluate,
                       const spec::LoadedSpec& loaded, const fs::path& run_dir,
                       TaskReport& report) {
  const spec::Experiment& s = loaded.spec;
  const TaskDevice device_choice = resolveDevice(s, options.spec_path);
  report.write(train::startEvent("evaluate", options.spec_path.string(), run_dir.string(),
                                 device_choice.name, 1, 0, 0, MRCNN_VERSION));

  // An exported model (--backend openvino --onnx) runs without weights of ours: the spec's
  // model then only names the categories and the input.
  const bool exported = evaluate.backend == "openvino" && !evaluate.onnx.empty();
  const fs::path weights =
      exported ? fs::path() : weightsFile(options.checkpoint, loaded, run_dir, &report);
  if (!exported && weights.empty()) {
    return report.fail("no_checkpoint",
                       "no checkpoint to evaluate: " + weightsSearched(options.spec_path, run_dir),
                       kExitBadData);
  }
  // What is evaluated, naming the metrics file and the summary.
  const fs::path evaluated = exported ? evaluate.onnx : weights;

  std::ostringstream data_log, data_err;
  const std::optional<DataFiles> data =
      prepareData(loaded, data_log, data_err, DataNeeds{.train = false});
  if (!data_log.str().empty()) report.log(data_log.str());
  if (!data) return report.fail("bad_dataset", data_err.str(), kExitBadData);
  if (data->val_json.empty() || data->val_image_dir.empty()) {
    return report.fail("bad_spec",
                       options.spec_path.string() +
                           ": data_config: evaluation needs a validation set: set "
                           "val_json_file and val_image_dir (or use shapes_dataset)",
                       kExitBadSpec);
  }
  std::shared_ptr<const dataset::CocoDataset> val_gt;
  std::shared_ptr<const dataset::SampleSource> val_source;
  try {
    val_gt = std::make_shared<const dataset::CocoDataset>(dataset::loadCoco(data->val_json));
    val_source = std::make_shared<dataset::CocoFolderSource>(val_gt, data->val_image_dir);
  } catch (const std::exception& e) {
    return report.fail("bad_dataset", e.what(), kExitBadData);
  }

  // The model as the train task evaluates it (no folded batch norms), so that a checkpoint
  // scores here what its run reported for it.
  model::MaskRCNN net(nullptr);
  try {
    if (exported) {
      net = model::MaskRCNN(modelOptionsFromSpec(s, loaded.resolved));
    } else {
      WeightsReport w;
      net = loadModel(modelOptionsFromSpec(s, loaded.resolved), weights,
                      s.skip_checkpoint_variables(), &w);
      report.log("weights: " + weights.string() + " (" + w.kind + ", " +
                 std::to_string(w.loaded) + " tensors, " + std::to_string(w.skipped.size()) +
                 " skipped)");
    }
  } catch (const std::exception& e) {
    return report.fail("bad_checkpoint", e.what(), kExitBadData);
  }
  const c10::Device device = device_choice.device;
  const std::optional<Precision> precision = device_choice.precision;
  if (!precision->fallback.empty()) report.log(precision->fallback);
  // A checkpoint of ours is named by its step; other weights (torchvision's) have none.
  const uint64_t step = train::checkpointStepOf(evaluated.filename().string()).value_or(0);

  ValidationResult v;
  if (evaluate.backend == "openvino" || evaluate.tile.size > 0) {
    try {
      if (const int code =
              evaluateWithBackend(options, evaluate, loaded, run_dir, *data, *val_gt,
                                  std::move(net), weights, device_choice.name, report, v);
          code != kExitOk) {
        return code;
      }
    } catch (const std::exception& e) {
      return report.fail("evaluation_failed", e.what(), kExitFailed);
    }
  } else {
    report.log("precision: " + precision->name + " (LibTorch on " + device_choice.name + ")");
    net->to(device);
    try {
      Validator validator(val_gt, val_source, loaderOptionsFromSpec(loaded, /*training=*/false),
                          s.maskrcnn_config().include_mask(),
                          s.data_config().category_labels() == "category_id");
      validator.setPrecision(*precision);
      validator.setDatasetPaths(fs::absolute(data->val_json).string(),
                                fs::absolute(data->val_image_dir).string());
      v = validator.run(*net, device);
    } catch (const std::exception& e) {
      return report.fail("evaluation_failed", e.what(), kExitFailed);
    }
  }
  for (const auto& w : v.warnings) {
    report.write(train::warningEvent(std::string(dataset::loaderWarningName(w.code)), w.message,
                                     w.image_id, w.annotation_id.value_or(0)));
  }
  // OpenVINO's numbers beside LibTorch's, not over them.
  const fs::path metrics_path =
      run_dir / "eval" /
      (evaluated.stem().string() + (evaluate.backend == "openvino" ? ".openvino" : "") +
       (evaluate.tile.size > 0 ? ".tiled" : "") + ".json");
  try {
    io::writeFileAtomic(metrics_path, eval::metricsJson(v.report));
  } catch (const std::exception& e) {
    return report.fail(e, "write_failed", "", kExitBadData);
  }
  const train::CocoSummary bbox = cocoSummary(*v.report.bbox, *val_gt);
  std::optional<train::CocoSummary> segm;
  if (v.report.segm) segm = cocoSummary(*v.report.segm, *val_gt);
  report.write(train::evalEvent(step, v.images, bbox, segm ? &*segm : nullptr,
                                metrics_path.string(), v.losses ? &*v.losses : nullptr));

  std::ostringstream summary;
  summary << evaluated.filename().string() << " on " << v.images << " images of "
          << data->val_json.string() << ": " << apSummary("bbox", *v.report.bbox);
  if (v.report.segm) summary << ", " << apSummary("segm", *v.report.segm);
  summary << "; metrics " << metrics_path.string();
  report.write(train::doneEvent("ok", summary.str(), report.elapsed()));
  return kExitOk;
}

}  // namespace

int runEvaluate(const TaskOptions& options, const EvaluateOptions& evaluate, std::ostream& out,
                std::ostream& err) {
  const TaskEntry entry("evaluate");
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    std::error_code ec;
    fs::create_directories(task.run_dir / "eval", ec);
    if (ec) {
      return task.report.fail("bad_run_dir",
                              "run directory: cannot create the folder " +
                                  (task.run_dir / "eval").string() + ": " + ec.message(),
                              kExitBadData);
    }
    EvaluateOptions chosen = evaluate;
    chosen.tile = chooseTiles(evaluate.tile, task.spec().spec);
    return evaluateCheckpoint(options, chosen, task.spec(), task.run_dir, task.report);
  });
}

}  // namespace mrcnn::engine
