#include "review/mistake_finder.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace mrcnn::review {
namespace {

std::string fixed(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// One image's annotations and detections and how they overlap.
struct ImageView {
  std::vector<const eval::GroundTruth*> gts;
  std::vector<const eval::Detection*> dets;  // highest score first
  // overlap[d * gts + g]: min(box IoU, mask IoU); a crowd annotation's is the share of the
  // detection inside it (pycocotools' crowd rule).
  std::vector<double> overlap;
  std::vector<int> gt_match;   // the detection matched to each annotation, -1 when none
  std::vector<int> det_match;  // the annotation matched to each detection, -1 when none

  double at(size_t d, size_t g) const { return overlap[d * gts.size() + g]; }
};

ImageView analyse(std::vector<const eval::GroundTruth*> gts,
                  std::vector<const eval::Detection*> dets, bool masks, double match_iou) {
  ImageView v;
  v.gts = std::move(gts);
  v.dets = std::move(dets);
  std::stable_sort(v.dets.begin(), v.dets.end(),
                   [](const eval::Detection* a, const eval::Detection* b) { return a->score > b->score; });
  const size_t nd = v.dets.size(), ng = v.gts.size();
  v.overlap.assign(nd * ng, 0.0);
  v.gt_match.assign(ng, -1);
  v.det_match.assign(nd, -1);
  if (nd == 0 || ng == 0) return v;
  std::vector<dataset::Box> dt_boxes(nd), gt_boxes(ng);
  std::vector<uint8_t> crowd(ng);
  for (size_t d = 0; d < nd; ++d) dt_boxes[d] = v.dets[d]->bbox;
  for (size_t g = 0; g < ng; ++g) {
    gt_boxes[g] = v.gts[g]->bbox;
    crowd[g] = v.gts[g]->iscrowd ? 1 : 0;
  }
  const dataset::IouMatrix boxes = dataset::iou(dt_boxes, gt_boxes, crowd);
  std::vector<double> mask_iou;
  if (masks) {
    std::vector<const dataset::Rle*> dt_masks(nd), gt_masks(ng);
    for (size_t d = 0; d < nd; ++d) dt_masks[d] = &v.dets[d]->mask;
    for (size_t g = 0; g < ng; ++g) gt_masks[g] = &v.gts[g]->mask;
    dataset::IouMatrix m;
    dataset::iou(dt_masks, gt_masks, crowd, m);
    mask_iou = std::move(m.values);
  }
  for (size_t i = 0; i < nd * ng; ++i) {
    double o = boxes.values[i];
    // -1: masks of different sizes (a results file made at another size): the box decides.
    if (masks && mask_iou[i] >= 0) o = std::min(o, mask_iou[i]);
    v.overlap[i] = o;
  }
  // COCO's greedy matching, one class at a time: each detection, highest score first, takes
  // the free annotation of its class it overlaps most (at least match_iou).
  for (size_t d = 0; d < nd; ++d) {
    int best = -1;
    double best_overlap = -1;
    for (size_t g = 0; g < ng; ++g) {
      if (v.gt_match[g] >= 0 || v.gts[g]->iscrowd ||
          v.gts[g]->category_id != v.dets[d]->category_id)
        continue;
      // Ties go to the first annotation (a duplicate's original keeps its detection).
      if (v.at(d, g) >= match_iou && v.at(d, g) > best_overlap) {
        best_overlap = v.at(d, g);
        best = static_cast<int>(g);
      }
    }
    if (best >= 0) {
      v.gt_match[static_cast<size_t>(best)] = static_cast<int>(d);
      v.det_match[d] = best;
    }
  }
  return v;
}

class Finder {
 public:
  Finder(const FinderInput& input, const FinderOptions& options) : in_(input), opt_(options) {
    for (const auto& [id, name] : input.category_names) names_[id] = name;
    for (const eval::GroundTruth& g : input.annotations) gts_[g.image_id].push_back(&g);
    for (const eval::Detection& d : input.detections) dets_[d.image_id].push_back(&d);
  }

  FinderResult run() {
    FinderResult result;
    // The model's typical overlap with annotations it agrees with: what "close" means here.
    std::vector<double> overlaps;
    for (const int64_t image : in_.image_ids) {
      const ImageView v = view(image);
      for (size_t d = 0; d < v.dets.size(); ++d) {
        if (v.det_match[d] >= 0 && v.dets[d]->score >= opt_.confident)
          overlaps.push_back(v.at(d, static_cast<size_t>(v.det_match[d])));
      }
    }
    result.confident_matches = overlaps.size();
    if (!overlaps.empty()) {
      std::nth_element(overlaps.begin(), overlaps.begin() + overlaps.size() / 2, overlaps.end());
      typical_ = overlaps[overlaps.size() / 2];
    } else {
      typical_ = 0.8;  // no evidence of the model's precision: a careful model's overlap
    }
    typical_ = std::max(typical_, opt_.match_iou);
    result.typical_overlap = typical_;
    for (const int64_t image : in_.image_ids) check(image, view(image), result.mistakes);
    std::sort(result.mistakes.begin(), result.mistakes.end(), [](const Mistake& a, const Mistake& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.image_id != b.image_id) return a.image_id < b.image_id;
      return a.annotation_id.value_or(0) < b.annotation_id.value_or(0);
    });
    return result;
  }

 private:
  ImageView view(int64_t image) const {
    const auto g = gts_.find(image);
    const auto d = dets_.find(image);
    return analyse(g == gts_.end() ? std::vector<const eval::GroundTruth*>{} : g->second,
                   d == dets_.end() ? std::vector<const eval::Detection*>{} : d->second,
                   in_.masks, opt_.match_iou);
  }

  std::string name(int64_t category) const {
    const auto it = names_.find(category);
    return it == names_.end() ? "category " + std::to_string(category) : it->second;
  }

  void add(std::vector<Mistake>& out, Mistake m) const {
    m.score = clamp01(m.score);
    if (m.score >= opt_.min_score) out.push_back(std::move(m));
  }

  static Suggestion fromDetection(const eval::Detection& d, bool masks) {
    Suggestion s;
    s.category_id = d.category_id;
    s.bbox = d.bbox;
    if (masks) s.mask = d.mask;
    return s;
  }

  // How much a detection of overlap `o` and confidence `s` speaks for an annotation.
  double support(double s, double o) const {
    return s * clamp01((o - opt_.localization_floor) / (opt_.match_iou - opt_.localization_floor));
  }

  void check(int64_t image, const ImageView& v, std::vector<Mistake>& out) const {
    const size_t nd = v.dets.size(), ng = v.gts.size();
    std::vector<bool> explained(ng, false);  // flagged once already (one entry an annotation)

    // Duplicates: the later of two annotations of one class over one object.
    if (ng > 1) {
      std::vector<dataset::Box> boxes(ng);
      std::vector<uint8_t> no_crowd(ng, 0);
      for (size_t g = 0; g < ng; ++g) boxes[g] = v.gts[g]->bbox;
      const dataset::IouMatrix b = dataset::iou(boxes, boxes, no_crowd);
      dataset::IouMatrix m;
      if (in_.masks) {
        std::vector<const dataset::Rle*> masks(ng);
        for (size_t g = 0; g < ng; ++g) masks[g] = &v.gts[g]->mask;
        dataset::iou(masks, masks, no_crowd, m);
      }
      for (size_t j = 0; j < ng; ++j) {
        for (size_t i = 0; i < ng; ++i) {
          const eval::GroundTruth& a = *v.gts[i];
          const eval::GroundTruth& later = *v.gts[j];
          if (i == j || a.iscrowd || later.iscrowd || a.category_id != later.category_id ||
              a.id >= later.id || explained[j])
            continue;
          double o = b.at(i, j);
          if (in_.masks && m.at(i, j) >= 0) o = std::min(o, m.at(i, j));
          if (o <= opt_.duplicate_iou) continue;
          explained[j] = true;
          add(out, {image, later.id, MistakeKind::kDuplicate, o, std::nullopt,
                    "the same " + name(a.category_id) + " as annotation " + std::to_string(a.id) +
                        " (overlap " + fixed(o) + ")"});
        }
      }
    }

    // Unmatched confident detections: a loosely drawn annotation of their class, or missing.
    for (size_t d = 0; d < nd; ++d) {
      const eval::Detection& det = *v.dets[d];
      if (v.det_match[d] >= 0 || det.score < opt_.confident) continue;
      bool in_crowd = false;
      double best_any = 0;
      int loose = -1;
      double loose_overlap = opt_.localization_floor;
      for (size_t g = 0; g < ng; ++g) {
        const eval::GroundTruth& gt = *v.gts[g];
        const double o = v.at(d, g);
        if (gt.iscrowd) {
          in_crowd = in_crowd || o >= opt_.match_iou;
          continue;
        }
        best_any = std::max(best_any, o);
        if (gt.category_id == det.category_id && v.gt_match[g] < 0 && !explained[g] &&
            o >= loose_overlap) {
          loose = static_cast<int>(g);
          loose_overlap = o;
        }
      }
      if (in_crowd) continue;
      if (loose >= 0) {
        const auto g = static_cast<size_t>(loose);
        explained[g] = true;
        add(out, localization(image, *v.gts[g], det, loose_overlap));
        continue;
      }
      if (best_any >= opt_.match_iou) continue;  // another class's annotation: wrong_class's
      add(out, {image, std::nullopt, MistakeKind::kMissing, det.score * (1 - best_any),
                fromDetection(det, in_.masks),
                "a " + name(det.category_id) + " detection (score " + fixed(det.score) +
                    ") that no annotation covers (best overlap " + fixed(best_any) + ")"});
    }

    for (size_t g = 0; g < ng; ++g) {
      const eval::GroundTruth& gt = *v.gts[g];
      if (gt.iscrowd || explained[g]) continue;
      // The most confident detections of its class and of another class on it.
      double own = 0, other = 0, sup = 0;
      int other_d = -1;
      for (size_t d = 0; d < nd; ++d) {
        const eval::Detection& det = *v.dets[d];
        const double o = v.at(d, g);
        sup = std::max(sup, support(det.score, o));
        if (o < opt_.match_iou) continue;
        if (det.category_id == gt.category_id) {
          own = std::max(own, det.score);
        } else if (det.score > other) {
          other = det.score;
          other_d = static_cast<int>(d);
        }
      }
      if (other_d >= 0 && other >= opt_.confident && other > own) {
        const eval::Detection& det = *v.dets[static_cast<size_t>(other_d)];
        Suggestion s;
        s.category_id = det.category_id;
        s.bbox = gt.bbox;
        add(out, {image, gt.id, MistakeKind::kWrongClass, other * (1 - own), s,
                  "labelled " + name(gt.category_id) + ", the model sees a " +
                      name(det.category_id) + " (score " + fixed(other) + "; " +
                      name(gt.category_id) + " at most " + fixed(own) + ")"});
        continue;
      }
      // Spurious only where no confident detection speaks for it.
      Mistake spurious{image, gt.id, MistakeKind::kSpurious, sup < opt_.confident ? 1 - sup : 0,
                       std::nullopt,
                       "a " + name(gt.category_id) +
                           " annotation the model does not see (support " + fixed(sup) + ")"};
      if (v.gt_match[g] >= 0) {
        // Matched, perhaps only by an unsure detection: the stronger of the two readings.
        const auto d = static_cast<size_t>(v.gt_match[g]);
        Mistake loose = localization(image, gt, *v.dets[d], v.at(d, g));
        add(out, loose.score >= spurious.score ? std::move(loose) : std::move(spurious));
        continue;
      }
      add(out, std::move(spurious));
    }
  }

  Mistake localization(int64_t image, const eval::GroundTruth& gt, const eval::Detection& det,
                       double overlap) const {
    const double evidence =
        clamp01((typical_ - overlap) / std::max(1e-6, typical_ - opt_.localization_floor));
    Suggestion s = fromDetection(det, in_.masks);
    s.category_id = gt.category_id;
    return {image, gt.id, MistakeKind::kLocalization, det.score * evidence, std::move(s),
            "its " + name(gt.category_id) + " detection (score " + fixed(det.score) +
                ") overlaps it by " + fixed(overlap) + " where the model's typical overlap is " +
                fixed(typical_)};
  }

  const FinderInput& in_;
  FinderOptions opt_;
  std::map<int64_t, std::string> names_;
  std::unordered_map<int64_t, std::vector<const eval::GroundTruth*>> gts_;
  std::unordered_map<int64_t, std::vector<const eval::Detection*>> dets_;
  double typical_ = 0.8;
};

}  // namespace

const char* kindName(MistakeKind kind) {
  switch (kind) {
    case MistakeKind::kMissing:
      return "missing";
    case MistakeKind::kWrongClass:
      return "wrong_class";
    case MistakeKind::kLocalization:
      return "localization";
    case MistakeKind::kSpurious:
      return "spurious";
    case MistakeKind::kDuplicate:
      return "duplicate";
  }
  return "?";
}

std::optional<MistakeKind> kindFromName(const std::string& name) {
  for (MistakeKind k : {MistakeKind::kMissing, MistakeKind::kWrongClass, MistakeKind::kLocalization,
                        MistakeKind::kSpurious, MistakeKind::kDuplicate}) {
    if (name == kindName(k)) return k;
  }
  return std::nullopt;
}

FinderResult findMistakes(const FinderInput& input, const FinderOptions& options) {
  return Finder(input, options).run();
}

std::vector<std::pair<int64_t, double>> imageScores(const FinderResult& result,
                                                    const std::vector<int64_t>& image_ids) {
  std::unordered_map<int64_t, double> best;
  for (const Mistake& m : result.mistakes) {
    double& s = best[m.image_id];
    s = std::max(s, m.score);
  }
  std::vector<std::pair<int64_t, double>> out;
  out.reserve(image_ids.size());
  for (const int64_t id : image_ids) {
    const auto it = best.find(id);
    out.emplace_back(id, it == best.end() ? 0.0 : it->second);
  }
  return out;
}

}  // namespace mrcnn::review
