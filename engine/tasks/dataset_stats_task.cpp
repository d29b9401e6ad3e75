// The dataset check (dataset/stats/dataset_stats.h) on a spec's train and val annotation files
// (the shapes dataset generated first when the spec uses it), with the spec's anchors, resize,
// num_classes and label mapping: the tables as a log event, a warning event a problem, and
// <run dir>/stats.json. On annotation files alone: dataset_stats_files_task.cpp.
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
namespace fs = std::filesystem;

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
    std::vector<std::pair<std::string, std::string>> files;
    if (!data->train_json.empty()) files.emplace_back("train", data->train_json.string());
    if (!data->val_json.empty()) files.emplace_back("val", data->val_json.string());
    if (files.empty()) {
      return report.fail("bad_dataset",
                         options.spec_path.string() +
                             ": no annotation file to check (a dataset of shards only: run "
                             "dataset_stats on the json files it was converted from)",
                         kExitBadData);
    }
    const auto& d = loaded.spec.data_config();
    const dataset::DatasetStats stats =
        dataset::datasetStatsOfFiles(files, dataset::anchorCoverageFromSpec(loaded),
                                     d.num_classes(), d.category_labels() == "category_id");
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
