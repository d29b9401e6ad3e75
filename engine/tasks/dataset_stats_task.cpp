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
#include "dataset/stats/spec_anchors.h"
#include "engine/exit_codes.h"
#include "engine/setup/data_files.h"
#include "engine/tasks/tasks.h"
#include "engine/events/event_writer.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

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
  const auto entry = TaskEntry("dataset_stats").onFiles().textReport();
  return runTask(entry, out, err, [&](TaskContext& task) {
    std::vector<std::pair<std::string, fs::path>> files;
    for (const fs::path& f : options.annotations)
      files.emplace_back(f.filename().string(), f);
    const dataset::DatasetStats stats = check(files, dataset::AnchorCoverageOptions{}, 0, false);
    task.report.log(dataset::datasetStatsText(stats));
    const fs::path json =
        (options.output_dir.empty() ? fs::path(".") : options.output_dir) / "stats.json";
    io::writeFileAtomic(json, dataset::datasetStatsJson(stats));
    task.report.log("stats written to " + json.string());
    return kExitOk;
  });
}

int runDatasetStats(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const TaskEntry entry("dataset_stats");
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    const spec::LoadedSpec& loaded = task.spec();
    TaskReport& report = task.report;
    report.write(train::startEvent("dataset_stats", options.spec_path.string(),
                                   task.run_dir.string(), "cpu", 1, 0, 0, MRCNN_VERSION));
    std::ostringstream data_log, data_err;
    const std::optional<DataFiles> data =
        prepareData(loaded, data_log, data_err,
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
    const auto& d = loaded.spec.data_config();
    const dataset::DatasetStats stats =
        check(files, dataset::anchorCoverageFromSpec(loaded), d.num_classes(),
              d.category_labels() == "category_id");
    report.log(dataset::datasetStatsText(stats));
    for (const dataset::Problem& p : stats.problems)
      report.warn(p.code, p.message);
    const fs::path json = task.run_dir / "stats.json";
    io::writeFileAtomic(json, dataset::datasetStatsJson(stats));
    report.write(train::doneEvent("ok",
                                  std::to_string(files.size()) + " annotation file(s) checked, " +
                                      std::to_string(stats.problems.size()) +
                                      " problem(s); stats " + json.string(),
                                  report.elapsed()));
    return kExitOk;
  });
}

}  // namespace mrcnn::engine
