#include <chrono>
#include <cstdlib>
#include <exception>
#include <ostream>

#include "dataset/coco/coco.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/results_json.h"
#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"
#include "engine/util/atomic_file.h"

namespace mrcnn::engine {
namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int runEvaluateFiles(const EvaluateFilesOptions& options, std::ostream& out, std::ostream& err) {
  const std::string& type = options.iou_type;
  if (!type.empty() && type != "bbox" && type != "segm" && type != "both") {
    err << "mrcnn-engine: --iou-type must be bbox, segm or both, got \"" << type << "\"\n";
    return kExitUsage;
  }
  try {
    const auto started = std::chrono::steady_clock::now();
    const dataset::CocoDataset gt = dataset::loadCoco(options.annotations);
    for (const auto& w : gt.warnings()) {
      err << options.annotations.string() << ": warning: " << w.key_path << ": " << w.message
          << '\n';
    }
    std::vector<int64_t> category_ids;
    for (const auto& c : gt.categories()) category_ids.push_back(c.id);
    eval::LoadedResults results =
        eval::loadResults(options.results, eval::imageSizes(gt), category_ids);
    for (const auto& w : results.warnings) {
      err << options.results.string() << ": warning: byte " << w.byte_offset << ": ["
          << w.index << "]: " << w.message << '\n';
    }
    const bool segm = type == "segm" || type == "both" || (type.empty() && results.has_masks);
    const bool bbox = type != "segm";
    if (segm && !results.has_masks) {
      err << options.results.string()
          << ": warning: results carry no masks: their boxes are evaluated as masks, as "
             "pycocotools does\n";
    }
    out << "loaded " << gt.images().size() << " images, " << gt.annotations().size()
        << " annotations and " << results.detections.size() << " results in "
        << secondsSince(started) << " s\n";

    eval::EvaluationReport report;
    for (const auto& [enabled, iou, name] :
         {std::tuple{bbox, eval::IouType::Bbox, "bbox"}, std::tuple{segm, eval::IouType::Segm, "segm"}}) {
      if (!enabled) continue;
      // Timed from the ground truth's preparation (its masks for segm) to the summary, as
      // COCOeval's evaluate, accumulate and summarize are.
      const auto t0 = std::chrono::steady_clock::now();
      const eval::EvalSet set = eval::groundTruthSet(gt, iou);
      eval::EvalParams params;
      // MRCNN_EVAL_THREADS caps the threads (benchmarks compare one and all cores).
      if (const char* threads = std::getenv("MRCNN_EVAL_THREADS")) params.threads = std::atoi(threads);
      eval::EvalResult r = eval::evaluate(set, results.detections, iou, params);
      out << "Evaluate annotation type *" << name << "* (" << secondsSince(t0) << " s)\n"
          << eval::summaryText(r);
      (iou == eval::IouType::Bbox ? report.bbox : report.segm) = std::move(r);
    }
    if (!options.metrics_out.empty()) {
      writeFileAtomic(options.metrics_out, eval::metricsJson(report) + "\n");
      out << "metrics written to " << options.metrics_out.string() << '\n';
    }
  } catch (const dataset::CocoError& e) {
    err << "error: " << e.what() << '\n';
    return kExitBadData;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace mrcnn::engine
