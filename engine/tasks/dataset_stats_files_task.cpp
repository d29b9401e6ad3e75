// The dataset check (dataset/stats/dataset_stats.h) on annotation files alone, with the
// default anchors: the tables and problems as text, stats.json into the output folder (default:
// the current folder). No spec, no model.
#include <filesystem>
#include <ostream>

#include "dataset/stats/dataset_stats.h"
#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {

namespace fs = std::filesystem;

int runDatasetStatsFiles(const DatasetStatsOptions& options, std::ostream& out, std::ostream& err) {
  const auto entry = TaskEntry("dataset_stats").onFiles().textReport();
  return runTask(entry, out, err, [&](TaskContext& task) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const fs::path& f : options.annotations)
      files.emplace_back(f.filename().string(), f.string());
    const dataset::DatasetStats stats =
        dataset::datasetStatsOfFiles(files, dataset::AnchorCoverageOptions{});
    task.report.log(dataset::datasetStatsText(stats));
    const fs::path json =
        (options.output_dir.empty() ? fs::path(".") : options.output_dir) / "stats.json";
    io::writeFileAtomic(json, dataset::datasetStatsJson(stats));
    task.report.log("stats written to " + json.string());
    return kExitOk;
  });
}

}  // namespace mrcnn::engine
