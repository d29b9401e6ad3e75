#include "eval/evaluator.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "io/json_writer.h"
#include "eval/curves.h"
#include "eval/results_json.h"

namespace mrcnn::eval {
namespace {

// Keeps the ground truth of the chosen images only, as COCOeval does with params.imgIds.
void restrict(EvalSet& set, const std::vector<int64_t>& images) {
  if (images.empty()) return;
  const std::set<int64_t> keep(images.begin(), images.end());
  std::erase_if(set.image_ids, [&](int64_t id) { return !keep.count(id); });  // file order stays
  std::erase_if(set.ground_truths, [&](const GroundTruth& g) { return !keep.count(g.image_id); });
}

void writeConfusion(io::JsonWriter& json, const ConfusionMatrix& c) {
  json.beginObject().key("categories").beginArray();
  for (int64_t id : c.category_ids)
    json.value(id);
  json.endArray().key("iou").value(c.iou).key("score").value(c.score).key("matrix").beginArray();
  const std::size_t n = c.category_ids.size() + 1;
  for (std::size_t row = 0; row < n; ++row) {
    json.beginArray();
    for (std::size_t col = 0; col < n; ++col)
      json.value(c.at(row, col));
    json.endArray();
  }
  json.endArray();
  // The images behind each non-empty cell: [row, column, [image ids]].
  json.key("images").beginArray();
  for (std::size_t cell = 0; cell < c.images.size(); ++cell) {
    if (c.images[cell].empty()) continue;
    json.beginArray().value(static_cast<int64_t>(cell / n)).value(static_cast<int64_t>(cell % n));
    json.beginArray();
    for (int64_t id : c.images[cell])
      json.value(id);
    json.endArray().endArray();
  }
  json.endArray().endObject();
}

void writeTide(io::JsonWriter& json, const TideResult& t) {
  const auto byType = [](io::JsonWriter& w, const auto& values) {
    w.beginObject();
    for (std::size_t i = 0; i < kTideErrorNames.size(); ++i)
      w.key(kTideErrorNames[i]).value(values[i]);
    w.endObject();
  };
  json.beginObject().key("iou").value(t.pos_iou).key("background_iou").value(t.background_iou);
  json.key("max_dets").value(static_cast<int64_t>(t.max_dets)).key("ap").value(t.ap);
  byType(json.key("main"), t.main_dap);
  json.key("special").beginObject().key("FalsePos").value(t.false_positive_dap);
  json.key("FalseNeg").value(t.false_negative_dap).endObject();
  byType(json.key("counts"), t.counts);
  json.key("images").beginArray();
  for (std::size_t i = 0; i < std::min(t.images.size(), kTideImagesListed); ++i) {
    json.beginObject().key("image_id").value(t.images[i].image_id);
    json.key("errors").value(t.images[i].total);
    byType(json.key("counts"), t.images[i].counts);
    json.endObject();
  }
  json.endArray().endObject();
}

void writeResult(io::JsonWriter& json, const EvalResult& r,
                 const std::optional<ConfusionMatrix>& confusion,
                 const std::optional<TideResult>& tide) {
  json.beginObject().key("stats").beginArray();
  for (double s : r.stats)
    json.value(s);
  json.endArray().key("per_category").beginObject();
  for (std::size_t k = 0; k < r.category_ids.size(); ++k) {
    json.key(std::to_string(r.category_ids[k])).value(r.per_category_ap[k]);
  }
  json.endObject();
  // Precision over the 101 recall thresholds at IoU .50 and .75 (area all, 100 detections).
  json.key("pr_curves").beginObject();
  for (std::size_t k = 0; k < r.category_ids.size(); ++k) {
    json.key(std::to_string(r.category_ids[k])).beginObject();
    for (const auto& [label, iou] : {std::pair{"0.50", 0.5}, std::pair{"0.75", 0.75}}) {
      json.key(label).beginArray();
      for (double p : precisionCurve(r, k, iou))
        json.value(p);
      json.endArray();
    }
    json.endObject();
  }
  json.endObject();
  // The score at each recall threshold of the .50 curve (where a threshold puts the point).
  json.key("pr_scores").beginObject();
  for (std::size_t k = 0; k < r.category_ids.size(); ++k) {
    json.key(std::to_string(r.category_ids[k])).beginObject().key("0.50").beginArray();
    for (double v : scoreCurve(r, k, 0.5))
      json.value(v);
    json.endArray().endObject();
  }
  json.endObject();
  // Per category, the score that maximises F1 at IoU .50 (null: no ground truth or no hit).
  json.key("thresholds").beginObject().key("iou").value(0.5).key("categories").beginObject();
  for (std::size_t k = 0; k < r.category_ids.size(); ++k) {
    json.key(std::to_string(r.category_ids[k]));
    if (const auto t = bestF1Threshold(r, k, 0.5)) {
      json.beginObject().key("score").value(t->score).key("precision").value(t->precision);
      json.key("recall").value(t->recall).key("f1").value(t->f1).endObject();
    } else {
      json.value(nullptr);
    }
  }
  json.endObject().endObject();
  if (confusion) writeConfusion(json.key("confusion"), *confusion);
  if (tide) writeTide(json.key("tide"), *tide);
  json.endObject();
}

}  // namespace

const EvalResult& evaluateInto(EvaluationReport& report, const EvalSet& set,
                               std::span<const Detection> detections, IouType type,
                               const EvalParams& params) {
  const bool bbox = type == IouType::Bbox;
  (bbox ? report.bbox_confusion : report.segm_confusion) = confusionMatrix(set, detections, type);
  (bbox ? report.bbox_tide : report.segm_tide) = tideErrors(set, detections, type);
  std::optional<EvalResult>& result = bbox ? report.bbox : report.segm;
  result = eval::evaluate(set, detections, type, params);
  return *result;
}

CocoEvaluator::CocoEvaluator(const dataset::CocoDataset& ground_truth, bool with_masks,
                             std::vector<int64_t> images)
    : bbox_set_(groundTruthSet(ground_truth, IouType::Bbox)), with_masks_(with_masks) {
  for (const auto& c : ground_truth.categories())
    category_names_[c.id] = c.name;
  restrict(bbox_set_, images);
  if (with_masks_) {
    segm_set_ = groundTruthSet(ground_truth, IouType::Segm);
    restrict(segm_set_, images);
  }
}

EvaluationReport CocoEvaluator::evaluate(std::vector<Detection> detections,
                                         const EvalParams& params) const {
  for (std::size_t i = 0; i < detections.size(); ++i)
    detections[i].id = static_cast<int64_t>(i) + 1;
  EvaluationReport report;
  report.category_names = category_names_;
  evaluateInto(report, bbox_set_, detections, IouType::Bbox, params);
  if (with_masks_) evaluateInto(report, segm_set_, detections, IouType::Segm, params);
  return report;
}

std::string metricsJson(const EvaluationReport& report) {
  std::ostringstream out;
  io::JsonWriter json(out);
  json.beginObject();
  if (report.bbox)
    writeResult(json.key("bbox"), *report.bbox, report.bbox_confusion, report.bbox_tide);
  if (report.segm)
    writeResult(json.key("segm"), *report.segm, report.segm_confusion, report.segm_tide);
  if (!report.category_names.empty()) {
    json.key("category_names").beginObject();
    for (const auto& [id, name] : report.category_names)
      json.key(std::to_string(id)).value(name);
    json.endObject();
  }
  if (!report.annotations_file.empty() || !report.image_dir.empty()) {
    json.key("dataset").beginObject().key("annotations").value(report.annotations_file);
    json.key("images").value(report.image_dir).endObject();
  }
  json.endObject();
  return out.str();
}

}  // namespace mrcnn::eval
