// `--task dataset_import`: a data set in another tool's format (LabelMe, VOC, CVAT, YOLO-seg,
// COCO) into COCO instances json, one file a split, with its report. No spec, no run
// directory: events on stdout (start, progress lines, a warning per kind of problem, the
// summary, done naming the files). The import itself lives in dataset/import (no Torch).
#include <algorithm>
#include <charconv>
#include <map>
#include <ostream>
#include <string>

#include "dataset/import/import.h"
#include "engine/events/event_writer.h"
#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;
namespace imp = dataset::import;

constexpr const char* kImportUsage =
    "usage: mrcnn-engine --task dataset_import --input PATH --output-dir DIR\n"
    "                    [--format labelme|voc|cvat|yolo|coco] [--split train=0.8,val=0.2]\n"
    "                    [--seed N] [--labels FILE] [--copy-images]\n";

// One warning event a kind of problem (its count and first place); the report has them all.
void warnByKind(TaskReport& report, const std::vector<imp::ImportProblem>& problems,
                const char* what) {
  std::map<std::string, std::pair<uint64_t, const imp::ImportProblem*>> kinds;
  for (const imp::ImportProblem& p : problems) {
    auto& [count, first] = kinds[p.code];
    if (count++ == 0) first = &p;
  }
  for (const auto& [code, entry] : kinds) {
    const imp::ImportProblem& p = *entry.second;
    std::string text = std::to_string(entry.first) + " " + what + " (" + code + "), first: " +
                       p.file + (p.place.empty() ? "" : ": " + p.place) + ": " + p.message;
    report.warn(code, text);
  }
}

}  // namespace

int runDatasetImport(const DatasetImportOptions& options, std::ostream& out, std::ostream& err) {
  imp::ImportOptions o;
  o.format = options.format;
  o.input = options.input;
  o.output_dir = options.output_dir;
  o.labels = options.labels;
  o.copy_images = options.copy_images;
  if (o.input.empty() || o.output_dir.empty()) {
    err << "mrcnn-engine: dataset_import needs --input and --output-dir\n" << kImportUsage;
    return kExitUsage;
  }
  static const char* kFormats[] = {"labelme", "voc", "cvat", "yolo", "coco"};
  if (!o.format.empty() && std::find(std::begin(kFormats), std::end(kFormats), o.format) ==
                               std::end(kFormats)) {
    err << "mrcnn-engine: --format " << o.format << ": use labelme, voc, cvat, yolo or coco\n";
    return kExitUsage;
  }
  if (!options.split.empty()) {
    if (const auto error = imp::parseSplit(options.split, &o.split)) {
      err << "mrcnn-engine: --split " << options.split << ": " << *error << '\n';
      return kExitUsage;
    }
  }
  if (!options.seed.empty()) {
    const std::string& s = options.seed;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), o.seed);
    if (ec != std::errc() || end != s.data() + s.size()) {
      err << "mrcnn-engine: --seed " << s << ": a whole number from 0\n";
      return kExitUsage;
    }
  }

  const auto entry = TaskEntry("dataset_import").onFiles().failureCode("import_failed");
  return runTask(entry, out, err, [&](TaskContext& task) {
    TaskReport& report = task.report;
    report.write(train::startEvent("dataset_import", "", "", "cpu", 1, 0, 0, MRCNN_VERSION));
    imp::ImportSummary summary;
    try {
      summary = imp::importDataset(o, [&](const std::string& line) { report.log(line); });
    } catch (const imp::ImportError& e) {
      // Nothing was written: the output folder is staged and renamed only at the end.
      throw TaskFailure("bad_dataset", e.what(), kExitBadData);
    }
    warnByKind(report, summary.warnings, "warning(s)");
    warnByKind(report, summary.skipped, "skipped");
    report.log(imp::formatSummary(summary));
    std::string files;
    for (const fs::path& f : summary.written)
      if (f.extension() == ".json") files += (files.empty() ? "" : ", ") + f.string();
    uint64_t images = 0, instances = 0;
    for (const auto& [name, counts] : summary.splits) {
      images += counts.images;
      instances += counts.instances;
    }
    report.write(train::doneEvent(
        "ok",
        summary.format + (summary.format_guessed ? " (detected)" : "") + ": " +
            std::to_string(images) + " images, " + std::to_string(instances) + " instances, " +
            std::to_string(summary.categories.size()) + " categories into " + files,
        report.elapsed()));
    return kExitOk;
  });
}

}  // namespace mrcnn::engine
