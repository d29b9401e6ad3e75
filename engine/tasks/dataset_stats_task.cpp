// The dataset check (dataset/stats/dataset_stats.h) on a spec's train and val annotation files
// (the shapes dataset generated first when the spec uses it), with the spec's anchors, resize,
// num_classes and label mapping: the tables as a log event, a warning event a problem, and
// <run dir>/stats.json. On annotation files alone: dataset_stats_files_task.cpp.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "dataset/loader/sample_order.h"
#include "dataset/loader/sample_source.h"
#include "dataset/stats/dataset_stats.h"
#include "dataset/stats/spec_anchors.h"
#include "engine/exit_codes.h"
#include "engine/setup/data_files.h"
#include "engine/tasks/tasks.h"
#include "engine/events/event_writer.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace fs = std::filesystem;
namespace {

// The repeat factors training would use (data_config.repeat_threshold): each category's share
// of the training images and its factor, the images that repeat and the epoch's length.
std::string repeatFactorsTable(const DataFiles& data, double threshold, bool skip_crowd) {
  const dataset::CocoFolderSource source(data.train_json, data.train_image_dir);
  std::vector<std::vector<uint32_t>> labels(source.size());
  std::map<uint32_t, size_t> holding;  // images holding each label
  for (size_t i = 0; i < source.size(); ++i) {
    labels[i] = source.labels(i, skip_crowd);
    std::set<uint32_t> seen(labels[i].begin(), labels[i].end());
    for (const uint32_t c : seen) ++holding[c];
  }
  const std::vector<double> factors = dataset::repeatFactors(labels, threshold);
  const std::vector<int64_t> ids = source.categoryIds();
  std::map<int64_t, std::string> names;
  for (const dataset::CocoCategory& c : source.dataset().categories()) names[c.id] = std::string(c.name);
  std::ostringstream t;
  char line[160];
  t << "repeat factors of the training images (repeat_threshold " << threshold
    << "; a category held by a share f of the images repeats max(1, sqrt(t / f)) times):\n";
  std::snprintf(line, sizeof line, "  %-24s %8s %8s %8s\n", "category", "images", "share", "factor");
  t << line;
  const auto n = static_cast<double>(source.size());
  for (const auto& [label, count] : holding) {
    const double share = static_cast<double>(count) / n;
    const int64_t id = label >= 1 && label <= ids.size() ? ids[label - 1] : 0;
    std::snprintf(line, sizeof line, "  %-24s %8zu %8.4f %8.3f\n", names[id].c_str(), count, share,
                  dataset::categoryRepeatFactor(share, threshold));
    t << line;
  }
  size_t repeated = 0;
  for (const double r : factors) repeated += r > 1 ? 1 : 0;
  t << "  " << repeated << " of " << source.size() << " images repeat; an epoch is "
    << dataset::repeatedEpochSize(factors) << " images";
  return t.str();
}

}  // namespace

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
    if (d.repeat_threshold() > 0 && !data->train_json.empty())
      report.log(repeatFactorsTable(*data, d.repeat_threshold(), d.skip_crowd_during_training()));
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
