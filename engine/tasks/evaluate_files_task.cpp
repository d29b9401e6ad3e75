// `--task evaluate` on files: a COCO results file scored against its annotations as
// pycocotools' COCOeval scores it (eval/), with the error analysis; no model, no LibTorch.
// Prints COCOeval's summary and, with --metrics-out, writes the metrics json.
#include <chrono>
#include <cstdlib>
#include <ostream>
#include <tuple>

#include "dataset/coco/coco.h"
#include "engine/cli_args.h"
#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"
#include "eval/evaluator.h"
#include "eval/results_json.h"
#include "io/atomic_file.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int runEvaluateFiles(const EvaluateFilesOptions& options, std::ostream& out, std::ostream& err) {
  const std::string& type = options.iou_type;
  if (!type.empty() && type != "bbox" && type != "segm" && type != "both") {
    err << programName() << ": --iou-type must be bbox, segm or both, got \"" << type << "\"\n";
    return kExitUsage;
  }
  const auto entry = TaskEntry("evaluate").onFiles().textReport();
  return runTask(entry, out, err, [&](TaskContext&) {
    const auto started = std::chrono::steady_clock::now();
    const dataset::CocoDataset gt = dataset::loadCoco(options.annotations);
    for (const auto& w : gt.warnings()) {
      err << options.annotations.string() << ": warning: " << w.key_path << ": " << w.message
          << '\n';
    }
    std::vector<int64_t> category_ids;
    for (const auto& c : gt.categories())
      category_ids.push_back(c.id);
    const eval::ImageSizes sizes = eval::imageSizes(gt);
    eval::LoadedResults results = eval::loadResults(options.results, sizes, category_ids);
    for (const auto& w : results.warnings) {
      err << options.results.string() << ": warning: byte " << w.byte_offset << ": [" << w.index
          << "]: " << w.message << '\n';
    }
    const bool segm = type == "segm" || type == "both" || (type.empty() && results.has_masks);
    const bool bbox = type != "segm";
    if (segm && !results.has_masks) {
      err << options.results.string()
          << ": warning: results carry no masks: their boxes are evaluated as masks, as "
             "pycocotools does\n";
      eval::rasterizeBoxMasks(results, sizes);
    }
    out << "loaded " << gt.images().size() << " images, " << gt.annotations().size()
        << " annotations and " << results.detections.size() << " results in "
        << secondsSince(started) << " s\n";

    eval::EvaluationReport report;
    report.annotations_file = fs::absolute(options.annotations).string();
    for (const auto& c : gt.categories())
      report.category_names[c.id] = c.name;
    for (const auto& [enabled, iou, name] : {std::tuple{bbox, eval::IouType::Bbox, "bbox"},
                                             std::tuple{segm, eval::IouType::Segm, "segm"}}) {
      if (!enabled) continue;
      // Timed from the ground truth's preparation (its masks for segm) to the summary, as
      // COCOeval's evaluate, accumulate and summarize are.
      const auto t0 = std::chrono::steady_clock::now();
      const eval::EvalSet set = eval::groundTruthSet(gt, iou);
      eval::EvalParams params;
      // MRCNN_EVAL_THREADS caps the threads (benchmarks compare one and all cores).
      if (const char* threads = std::getenv("MRCNN_EVAL_THREADS"))
        params.threads = std::atoi(threads);
      // The result with its error analysis (confusion matrix, TIDE), inside the timed evaluation.
      const eval::EvalResult& r = eval::evaluateInto(report, set, results.detections, iou, params);
      out << "Evaluate annotation type *" << name << "* (" << secondsSince(t0) << " s)\n"
          << eval::summaryText(r)
          << eval::tideSummaryText(iou == eval::IouType::Bbox ? *report.bbox_tide
                                                              : *report.segm_tide);
    }
    if (!options.metrics_out.empty()) {
      io::writeFileAtomic(options.metrics_out, eval::metricsJson(report) + "\n");
      out << "metrics written to " << options.metrics_out.string() << '\n';
    }
    return kExitOk;
  });
}

}  // namespace mrcnn::engine
