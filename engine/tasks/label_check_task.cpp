// The label check (review/mistake_finder.h) from a spec: likely label mistakes of a data set
// from the spec's model, run on a split's images first (its results kept in
// <output dir>/inference), into <output dir>/mistakes.json with the top of the list printed.
// With --folds K the detections are out-of-sample: K models, each trained on the other folds
// (<output dir>/folds/fold-k: its data, spec, run and detections), each run on its own fold.
// On files (annotations and a results file, no model): label_check_files_task.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "dataset/coco/coco.h"
#include "dataset/coco/coco_subset.h"
#include "engine/events/event_writer.h"
#include "engine/exit_codes.h"
#include "engine/setup/data_files.h"
#include "engine/tasks/label_check.h"
#include "engine/tasks/tasks.h"
#include "engine/train/stop_signal.h"
#include "io/atomic_file.h"
#include "specs/spec.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// The data the folds are cut from and trained against.
struct FoldData {
  fs::path annotations, image_dir;  // what is checked
  fs::path val_json, val_image_dir;  // what each fold's training evaluates on
};

// The images of `annotations` dealt into `k` folds after a seeded shuffle: fold[i] of each
// image id (sorted by id).
std::map<int64_t, uint32_t> dealFolds(const fs::path& annotations, uint32_t k, uint64_t seed) {
  const dataset::CocoDataset coco = dataset::loadCoco(annotations);
  std::vector<int64_t> ids;
  for (const dataset::CocoImage& im : coco.images()) ids.push_back(im.id);
  std::sort(ids.begin(), ids.end());
  if (ids.size() < k) {
    throw TaskFailure("bad_dataset",
                      annotations.string() + " has " + std::to_string(ids.size()) +
                          " images: too few for " + std::to_string(k) + " folds",
                      kExitBadData);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::map<int64_t, uint32_t> fold;
  for (size_t i = 0; i < ids.size(); ++i) fold[ids[i]] = static_cast<uint32_t>(i % k);
  return fold;
}

// The fold's spec: the spec's model and schedule (total_steps from --fold-steps when given)
// on the other folds' images; every path absolute, written beside the fold's data.
fs::path writeFoldSpec(const spec::LoadedSpec& loaded, const FoldData& data, const fs::path& dir,
                       uint64_t steps) {
  spec::Experiment s = loaded.spec;
  spec::anchorPaths(&s, loaded.resolved.spec_dir);
  spec::DataConfig* d = s.mutable_data_config();
  d->clear_shapes_dataset();
  d->clear_training_file_pattern();
  d->set_train_json_file((dir / "train.json").string());
  d->set_train_image_dir(data.image_dir.string());
  if (!data.val_json.empty()) {  // else the spec's own validation data (shards) stays
    d->set_val_json_file(data.val_json.string());
    d->set_val_image_dir(data.val_image_dir.string());
  }
  if (steps > 0) s.set_total_steps(static_cast<uint32_t>(steps));
  const fs::path path = dir / "spec.txt";
  io::writeFileAtomic(path, "# label_check: a fold's model, trained on the other folds' images\n" +
                                spec::printResolved(s));
  return path;
}

// Out-of-sample detections on data.annotations: for each fold, a model trained on the others
// (resumed where a run stopped; a finished one is not trained again) run on the fold. Returns
// the merged results file, or an empty path when a stop was asked for.
fs::path foldResults(const TaskOptions& options, const spec::LoadedSpec& loaded,
                     const LabelCheckOptions& check, const FoldData& data,
                     const fs::path& output_dir, TaskReport& report) {
  const uint32_t k = check.folds;
  const std::map<int64_t, uint32_t> fold = dealFolds(data.annotations, k, loaded.spec.seed());
  const auto started = std::chrono::steady_clock::now();
  std::string merged = "[";
  for (uint32_t f = 0; f < k; ++f) {
    const fs::path dir = output_dir / "folds" / ("fold-" + std::to_string(f + 1));
    fs::create_directories(dir);
    std::set<int64_t> held, rest;
    for (const auto& [id, which] : fold) (which == f ? held : rest).insert(id);
    io::writeFileAtomic(dir / "train.json", dataset::cocoSubset(data.annotations, rest));
    io::writeFileAtomic(dir / "heldout.json", dataset::cocoSubset(data.annotations, held));
    TaskOptions fo;
    fo.task = "train";
    fo.spec_path = writeFoldSpec(loaded, data, dir, check.fold_steps);
    fo.run_dir = dir / "run";
    fo.events_to_stdout = false;
    fo.test_faults = options.test_faults;
    report.log("fold " + std::to_string(f + 1) + " of " + std::to_string(k) + ": training on " +
               std::to_string(rest.size()) + " images, checking " + std::to_string(held.size()) +
               " (" + fo.run_dir.string() + ")");
    std::ostringstream sink;
    int code = runTrain(fo, sink, sink);
    if (train::StopSignal::requested()) return {};
    if (code != kExitOk) {
      throw TaskFailure("fold_failed",
                        "fold " + std::to_string(f + 1) + ": training failed (exit " +
                            std::to_string(code) + "); its log: " +
                            (fo.run_dir / "log.txt").string() + "\n" + sink.str(),
                        code);
    }
    InferenceOptions inference;
    inference.images = data.image_dir;
    inference.image_list = dir / "heldout.json";
    inference.out = dir / "inference";
    inference.overlays = false;
    inference.overlay_threshold = 0;
    fo.task = "inference";
    std::ostringstream inference_sink;
    code = runInference(fo, inference, inference_sink, inference_sink);
    if (code != kExitOk) {
      throw TaskFailure("fold_failed",
                        "fold " + std::to_string(f + 1) + ": its model could not run on " +
                            (dir / "heldout.json").string() + ": " + inference_sink.str(),
                        code);
    }
    std::ifstream in(inference.out / "results.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && text.back() != ']') text.pop_back();
    const size_t open = text.find('[');
    if (open == std::string::npos || text.size() < open + 2) {
      throw TaskFailure("fold_failed", (inference.out / "results.json").string() + ": not a JSON array",
                        kExitFailed);
    }
    const std::string items = text.substr(open + 1, text.size() - open - 2);
    if (items.find_first_not_of(" \n\t\r") != std::string::npos) {
      if (merged.size() > 1) merged += ',';
      merged += items;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double rate = static_cast<double>(f + 1) / std::max(1e-9, elapsed);
    report.write(train::itemProgressEvent(f + 1, rate, static_cast<double>(k - f - 1) / rate));
  }
  merged += "]\n";
  const fs::path results = output_dir / "inference" / "results.json";
  fs::create_directories(results.parent_path());
  io::writeFileAtomic(results, merged);
  return results;
}
}  // namespace

int runLabelCheck(const TaskOptions& options, const LabelCheckOptions& check, std::ostream& out,
                  std::ostream& err) {
  const auto outputDir = [&](const fs::path& run_dir) {
    return check.output_dir.empty() ? run_dir / "label_check" : check.output_dir;
  };
  const auto entry = TaskEntry("label_check")
                         .runDirEvents(RunDirEvents::Never)
                         .eventsDir(outputDir)
                         .gracefulStop();
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    TaskReport& report = task.report;
    const fs::path output_dir = outputDir(task.run_dir);
    report.write(train::startEvent("label_check", options.spec_path.string(),
                                   task.run_dir.string(), "", 1, check.folds, 0, MRCNN_VERSION));
    // Which annotations: given, or the spec's split.
    fs::path annotations = check.annotations, image_dir = check.image_dir;
    FoldData fold_data;
    if (annotations.empty() || check.folds > 0) {
      std::ostringstream data_log, data_err;
      const bool train = check.split == "train";
      const bool folds = check.folds > 0;
      const std::optional<DataFiles> data = prepareData(
          task.spec(), data_log, data_err,
          DataNeeds{.train = train, .val_json = !train || folds, .val_images = !train || folds});
      if (!data_log.str().empty()) report.log(data_log.str());
      if (!data) return report.fail("bad_dataset", data_err.str(), kExitBadData);
      fold_data.val_json = data->val_json;
      fold_data.val_image_dir = data->val_image_dir;
      if (!annotations.empty()) {
        fold_data.annotations = annotations;
        fold_data.image_dir = image_dir;
      } else {
        annotations = train ? data->train_json : data->val_json;
        image_dir = train ? data->train_image_dir : data->val_image_dir;
      }
      if (annotations.empty()) {
        return report.fail("bad_dataset",
                           options.spec_path.string() + ": the " + (train ? "train" : "val") +
                               " split has no annotation file to check (give --annotations F "
                               "--image-dir D)",
                           kExitBadData);
      }
    }
    if (check.folds > 0) {
      fold_data.annotations = annotations;
      fold_data.image_dir = image_dir;
      const fs::path results = foldResults(options, task.spec(), check, fold_data, output_dir, report);
      if (results.empty()) {
        report.write(train::doneEvent("stopped",
                                      "stopped on request; the same command resumes the folds",
                                      report.elapsed()));
        return kExitOk;
      }
      return checkLabels(annotations, results, false, image_dir, check, output_dir, report);
    }
    // The model's detections on those images, into <output dir>/inference.
    InferenceOptions inference;
    inference.images = image_dir;
    inference.image_list = annotations;
    inference.out = output_dir / "inference";
    inference.overlays = false;
    inference.overlay_threshold = 0;
    std::ostringstream inference_out, inference_err;
    report.log("running the model on the images of " + annotations.string());
    const int code = runInference(options, inference, inference_out, inference_err);
    if (code != kExitOk) {
      return report.fail("inference_failed",
                         "the model could not run on " + annotations.string() + ": " +
                             inference_err.str() + inference_out.str(),
                         code);
    }
    return checkLabels(annotations, inference.out / "results.json", false, image_dir, check,
                       output_dir, report);
  });
}

}  // namespace mrcnn::engine
