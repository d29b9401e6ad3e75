// The dataset check (dataset/stats/dataset_stats.h) as a task: on a spec's train and val
// annotation files (the shapes dataset generated first when the spec uses it), with the
// spec's anchors, resize, num_classes and label mapping; or on annotation files alone with
// the default anchors. Prints the tables and problems (spec mode: as events, each problem a
// warning event) and writes stats.json into the output folder (spec mode: the run directory).
#include <cmath>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "dataset/stats/dataset_stats.h"
#include "engine/exit_codes.h"
#include "engine/tasks/task_common.h"
#include "engine/tasks/tasks.h"
#include "engine/train/event_writer.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

dataset::AnchorCoverageOptions anchorsFromSpec(const spec::LoadedSpec& loaded) {
  const auto& m = loaded.spec.maskrcnn_config();
  const auto& d = loaded.spec.data_config();
  dataset::AnchorCoverageOptions o;
  if (m.anchor_style() == "torchvision") {
    // torchvision's sizes 32..512 on levels 2..6 and ratios (h / w) 0.5, 1, 2.
    o.min_level = 2;
    o.max_level = 6;
    o.num_scales = 1;
    o.anchor_scale = 8;
    o.aspect_pairs = {
        {1.0, 1.0}, {std::sqrt(2.0), 1 / std::sqrt(2.0)}, {1 / std::sqrt(2.0), std::sqrt(2.0)}};
  } else {
    o.min_level = static_cast<int>(m.min_level());
    o.max_level = static_cast<int>(m.max_level());
    o.num_scales = static_cast<int>(m.num_scales());
    o.anchor_scale = m.anchor_scale();
    o.aspect_pairs = loaded.resolved.aspect_ratios;
  }
  o.shorter_side = d.resize_mode() == "shorter_side";
  o.canvas_height = loaded.resolved.image_height;
  o.canvas_width = loaded.resolved.image_width;
  o.min_size = static_cast<int>(d.min_size());
  o.max_size = static_cast<int>(d.max_size());
  o.positive_iou = m.rpn_positive_overlap();
  return o;
}

// Loads the files and runs the check; throws dataset::CocoError naming a bad file.
dataset::DatasetStats check(const std::vector<std::pair<std::string, fs::path>>& files,
                            const dataset::AnchorCoverageOptions& anchors, int64_t num_classes,
                            bool labels_are_ids) {
  std::vector<dataset::CocoDataset> data;
  data.reserve(files.size());
  for (const auto& [name, path] : files)
    data.push_back(dataset::loadCoco(path));
  std::vector<dataset::LabeledSet> sets;
  for (size_t i = 0; i < files.size(); ++i)
    sets.push_back({files[i].first, files[i].second.string(), &data[i]});
  return dataset::datasetStats(sets, anchors, num_classes, labels_are_ids);
}

}  // namespace

int runDatasetStatsFiles(const DatasetStatsOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::pair<std::string, fs::path>> files;
  for (const fs::path& f : options.annotations)
    files.emplace_back(f.filename().string(), f);
  try {
    const dataset::DatasetStats stats = check(files, dataset::AnchorCoverageOptions{}, 0, false);
    out << dataset::datasetStatsText(stats);
    const fs::path json =
        (options.output_dir.empty() ? fs::path(".") : options.output_dir) / "stats.json";
    io::writeFileAtomic(json, dataset::datasetStatsJson(stats));
    out << "stats written to " << json.string() << '\n';
  } catch (const dataset::CocoError& e) {
    err << "error: " << e.what() << '\n';
    return kExitBadData;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return exitCodeFor(e, kExitFailed);
  }
  return kExitOk;
}

int runDatasetStats(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const std::optional<spec::LoadedSpec> loaded = loadSpecReporting(options, err);
  if (!loaded) return kExitBadSpec;
  const fs::path run_dir = runDirectory(options, *loaded);
  const std::unique_ptr<train::EventWriter> events = openTaskEvents(run_dir, err);
  if (!events) return kExitBadData;
  TaskReport report(events.get(), out, err);
  try {
    report.write(train::startEvent("dataset_stats", options.spec_path.string(), run_dir.string(),
                                   "cpu", 1, 0, 0, MRCNN_VERSION));
    std::ostringstream data_log, data_err;
    const std::optional<DataFiles> data =
        prepareData(*loaded, data_log, data_err,
                    DataNeeds{.train = true, .val_json = true, .val_images = false});
    if (!data_log.str().empty()) report.log(data_log.str());
    if (!data) return report.fail("bad_dataset", data_err.str(), kExitBadData);
    std::vector<std::pair<std::string, fs::path>> files;
    if (!data->train_json.empty()) files.emplace_back("train", data->train_json);
    if (!data->val_json.empty()) files.emplace_back("val", data->val_json);
    if (files.empty()) {
      return report.fail("bad_dataset",
                         options.spec_path.string() +
                             ": no annotation file to check (a dataset of shards only: run "
                             "dataset_stats on the json files it was converted from)",
                         kExitBadData);
    }
    const auto& d = loaded->spec.data_config();
    dataset::DatasetStats stats;
    try {
      stats = check(files, anchorsFromSpec(*loaded), d.num_classes(),
                    d.category_labels() == "category_id");
    } catch (const dataset::CocoError& e) {
      return report.fail("bad_dataset", e.what(), kExitBadData);
    }
    report.log(dataset::datasetStatsText(stats));
    for (const dataset::Problem& p : stats.problems)
      report.warn(p.code, p.message);
    const fs::path json = run_dir / "stats.json";
    io::writeFileAtomic(json, dataset::datasetStatsJson(stats));
    report.write(train::doneEvent("ok",
                                  std::to_string(files.size()) + " annotation file(s) checked, " +
                                      std::to_string(stats.problems.size()) +
                                      " problem(s); stats " + json.string(),
                                  report.elapsed()));
  } catch (const std::exception& e) {
    return report.fail(e, "dataset_stats_failed", "", kExitFailed);
  }
  return kExitOk;
}

}  // namespace mrcnn::engine
