#include "engine/eval/evaluator.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "dataset/json_writer.h"
#include "engine/eval/results_json.h"

namespace mrcnn::eval {
namespace {

// Keeps the ground truth of the chosen images only, as COCOeval does with params.imgIds.
void restrict(EvalSet& set, const std::vector<int64_t>& images) {
  if (images.empty()) return;
  const std::set<int64_t> keep(images.begin(), images.end());
  set.image_ids.assign(keep.begin(), keep.end());
  std::erase_if(set.ground_truths,
                [&](const GroundTruth& g) { return !keep.count(g.image_id); });
}

void writeResult(dataset::JsonWriter& json, const EvalResult& r) {
  json.beginObject().key("stats").beginArray();
  for (double s : r.stats) json.value(s);
  json.endArray().key("per_category").beginObject();
  for (std::size_t k = 0; k < r.category_ids.size(); ++k) {
    json.key(std::to_string(r.category_ids[k])).value(r.per_category_ap[k]);
  }
  json.endObject().endObject();
}

}  // namespace

CocoEvaluator::CocoEvaluator(const dataset::CocoDataset& ground_truth, bool with_masks,
                             std::vector<int64_t> images)
    : bbox_set_(groundTruthSet(ground_truth, IouType::Bbox)), with_masks_(with_masks) {
  restrict(bbox_set_, images);
  if (with_masks_) {
    segm_set_ = groundTruthSet(ground_truth, IouType::Segm);
    restrict(segm_set_, images);
  }
}

EvaluationReport CocoEvaluator::evaluate(std::vector<Detection> detections,
                                         const EvalParams& params) const {
  for (std::size_t i = 0; i < detections.size(); ++i) detections[i].id = static_cast<int64_t>(i) + 1;
  EvaluationReport report;
  report.bbox = eval::evaluate(bbox_set_, detections, IouType::Bbox, params);
  if (with_masks_) report.segm = eval::evaluate(segm_set_, detections, IouType::Segm, params);
  return report;
}

std::string metricsJson(const EvaluationReport& report) {
  std::ostringstream out;
  dataset::JsonWriter json(out);
  json.beginObject();
  if (report.bbox) writeResult(json.key("bbox"), *report.bbox);
  if (report.segm) writeResult(json.key("segm"), *report.segm);
  json.endObject();
  return out.str();
}

}  // namespace mrcnn::eval
