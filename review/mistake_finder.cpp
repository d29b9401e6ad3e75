#include "review/mistake_finder.h"

#include "review/label_geometry.h"

#include <algorithm>
#include <array>
#include <cmath>
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

// A score (a probability that the label is wrong) with the outline's vote added as evidence:
// odds times the vote's odds, the vote held to [kVoteFloor, 1 - kVoteFloor] (the geometry
// alone never more than 19 to 1 either way); a vote of 0.5 leaves the score as it is.
double withVote(double score, double vote) {
  constexpr double kVoteFloor = 0.05;
  if (vote == 0.5) return score;  // the geometry said nothing (exactly what LabelGeometry returns then)
  const double s = std::clamp(score, 1e-6, 1 - 1e-6);
  const double r = std::clamp(vote, kVoteFloor, 1 - kVoteFloor);
  const double odds = s / (1 - s) * (r / (1 - r));
  return odds / (1 + odds);
}

double median(std::vector<double> v, double otherwise) {
  if (v.empty()) return otherwise;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// A measure's usual value over the confident matches and its spread (the median absolute
// deviation, at least 0.02): how far below usual a value is, 0..1: from one spread below the
// median (closer is the model's own imprecision), rising linearly to 1 at `floor` (two
// shapes that no longer overlap enough to be one object).
struct Spread {
  double median = 0.8;
  double mad = 0.05;

  static Spread of(const std::vector<double>& values) {
    Spread s;
    if (values.empty()) return s;
    s.median = ::mrcnn::review::median(values, 0.8);
    std::vector<double> deviations;
    deviations.reserve(values.size());
    for (const double v : values) deviations.push_back(std::abs(v - s.median));
    s.mad = std::max(0.02, ::mrcnn::review::median(deviations, 0.05));
    return s;
  }
  double below(double value, double floor) const {
    return clamp01((median - mad - value) / std::max(1e-6, median - mad - floor));
  }
  // The same upwards: from one spread above the median to 1 at `ceiling`.
  double above(double value, double ceiling) const {
    return clamp01((value - median - mad) / std::max(1e-6, ceiling - median - mad));
  }
  // Either way, in spreads: 0 within `from` spreads of the median, 1 at `to` spreads.
  double off(double value, double from, double to) const {
    return clamp01((std::abs(value - median) / mad - from) / (to - from));
  }
};

// How an annotation's mask and a detection's differ in size and in how fully each fills its
// box, the two signs of a coarse polygon (its box drawn as the outline: larger and fuller)
// or an eroded one (smaller): log(annotation's area / detection's), and annotation's fill
// minus detection's. Unknown without both masks.
struct ShapeGap {
  double log_area = 0;
  double fill = 0;
  bool known = false;

  static ShapeGap of(const eval::GroundTruth& g, const eval::Detection& d) {
    ShapeGap s;
    const double ga = static_cast<double>(dataset::area(g.mask));
    const double da = static_cast<double>(dataset::area(d.mask));
    const double gb = g.bbox[2] * g.bbox[3], db = d.bbox[2] * d.bbox[3];
    if (ga <= 0 || da <= 0 || gb <= 0 || db <= 0) return s;
    s.log_area = std::log(ga / da);
    s.fill = ga / gb - da / db;
    s.known = true;
    return s;
  }
};

// One image's annotations and detections and how they overlap.
struct ImageView {
  std::vector<const eval::GroundTruth*> gts;
  std::vector<const eval::Detection*> dets;  // highest score first
  // overlap[d * gts + g]: min(box IoU, mask IoU); a crowd annotation's is the share of the
  // detection inside it (pycocotools' crowd rule).
  std::vector<double> overlap;
  std::vector<double> box_iou, mask_iou;  // the two measures (mask_iou empty without masks)
  std::vector<int> gt_match;   // the detection matched to each annotation, -1 when none
  std::vector<int> det_match;  // the annotation matched to each detection, -1 when none

  double at(size_t d, size_t g) const { return overlap[d * gts.size() + g]; }
  double boxAt(size_t d, size_t g) const { return box_iou[d * gts.size() + g]; }
  // -1 when unknown (no masks, or masks of another size).
  double maskAt(size_t d, size_t g) const {
    return mask_iou.empty() ? -1 : mask_iou[d * gts.size() + g];
  }
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
  v.box_iou = boxes.values;
  v.mask_iou = std::move(mask_iou);
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
  Finder(const FinderInput& input, const FinderOptions& options)
      : in_(input), opt_(options), geometry_(input.annotations, input.masks) {
    for (const auto& [id, name] : input.category_names) names_[id] = name;
    for (const eval::GroundTruth& g : input.annotations) gts_[g.image_id].push_back(&g);
    for (const eval::Detection& d : input.detections) dets_[d.image_id].push_back(&d);
  }

  FinderResult run() {
    FinderResult result;
    // How closely the model draws what it agrees with: the median and spread of its
    // confident matches' box IoU and mask IoU, each measure apart (a coarse polygon inside
    // the right box shows in the mask's, a shifted box in both).
    // Small objects are drawn less exactly than large ones: the measures are taken apart for
    // the thirds of the matches by size (the square root of the annotation's box area).
    struct Match {
      double side, overlap, box, mask;
      int64_t category;
      ShapeGap shape;
    };
    std::vector<Match> matches;
    for (const int64_t image : in_.image_ids) {
      const ImageView v = view(image);
      for (size_t d = 0; d < v.dets.size(); ++d) {
        if (v.det_match[d] < 0 || v.dets[d]->score < opt_.confident) continue;
        const auto g = static_cast<size_t>(v.det_match[d]);
        const double mask = v.maskAt(d, g);
        matches.push_back({side(*v.gts[g]), v.at(d, g), v.boxAt(d, g), mask, v.gts[g]->category_id,
                           mask >= 0 ? ShapeGap::of(*v.gts[g], *v.dets[d]) : ShapeGap{}});
      }
    }
    result.confident_matches = matches.size();
    std::vector<double> overlaps, sides;
    for (const Match& m : matches) {
      overlaps.push_back(m.overlap);
      sides.push_back(m.side);
    }
    typical_ = std::max(median(overlaps, 0.8), opt_.match_iou);
    result.typical_overlap = typical_;
    std::sort(sides.begin(), sides.end());
    if (!sides.empty()) cuts_ = {sides[sides.size() / 3], sides[2 * sides.size() / 3]};
    for (size_t b = 0; b < 3; ++b) {
      std::vector<double> boxes, masks, gaps;
      for (const Match& m : matches) {
        if (bucket(m.side) != b) continue;
        boxes.push_back(m.box);
        if (m.mask < 0) continue;
        masks.push_back(m.mask);
        gaps.push_back(m.box - m.mask);
      }
      box_[b] = Spread::of(boxes);
      mask_[b] = Spread::of(masks);
      gap_[b] = Spread::of(gaps);
    }
    // How the model's masks differ in size and fullness from the annotations it agrees with,
    // class by class (it may round a square's corners and draw circles exactly), all the
    // classes together for a class with few matches.
    std::map<int64_t, std::array<std::vector<double>, 2>> by_class;
    std::array<std::vector<double>, 2> all;
    for (const Match& m : matches) {
      if (!m.shape.known) continue;
      for (auto* values : {&by_class[m.category], &all}) {
        (*values)[0].push_back(m.shape.log_area);
        (*values)[1].push_back(m.shape.fill);
      }
    }
    shape_all_ = {Spread::of(all[0]), Spread::of(all[1])};
    for (const auto& [category, values] : by_class) {
      if (values[0].size() >= kClassMatches)
        shape_[category] = {Spread::of(values[0]), Spread::of(values[1])};
    }
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

  // How much a detection speaks for an object under an annotation: its confidence (full at
  // `confident`) times how much of the annotation's box it covers (from a tenth, full at
  // half): a small object drawn loosely by the model is still the model's object.
  // The share of box a inside box b.
  static double boxShare(const dataset::Box& a, const dataset::Box& b) {
    const double iw = std::min(a[0] + a[2], b[0] + b[2]) - std::max(a[0], b[0]);
    const double ih = std::min(a[1] + a[3], b[1] + b[3]) - std::max(a[1], b[1]);
    const double area = a[2] * a[3];
    return iw <= 0 || ih <= 0 || area <= 0 ? 0.0 : iw * ih / area;
  }

  double support(const eval::Detection& d, const eval::GroundTruth& g) const {
    const auto& a = d.bbox;
    const auto& b = g.bbox;
    const double iw = std::min(a[0] + a[2], b[0] + b[2]) - std::max(a[0], b[0]);
    const double ih = std::min(a[1] + a[3], b[1] + b[3]) - std::max(a[1], b[1]);
    const double area = b[2] * b[3];
    if (iw <= 0 || ih <= 0 || area <= 0) return 0;
    const double covered = iw * ih / area;
    return clamp01(d.score / opt_.confident) * clamp01((covered - 0.1) / 0.4);
  }

  // How much of an annotation's box the other annotations' masks cover outside its own: the
  // object is partly hidden behind others (0..1; 0 without masks).
  double hiddenShare(const ImageView& v, size_t g) const {
    const eval::GroundTruth& gt = *v.gts[g];
    if (!in_.masks || gt.mask.h == 0 || gt.mask.w == 0) return 0;
    std::vector<dataset::Rle> others;
    for (size_t o = 0; o < v.gts.size(); ++o) {
      const eval::GroundTruth& other = *v.gts[o];
      if (o == g || other.mask.h != gt.mask.h || other.mask.w != gt.mask.w ||
          boxShare(other.bbox, gt.bbox) <= 0)
        continue;
      others.push_back(other.mask);
    }
    if (others.empty()) return 0;
    const dataset::Rle box = dataset::rleFromBbox(gt.bbox, gt.mask.h, gt.mask.w);
    const uint64_t box_area = dataset::area(box);
    if (box_area == 0) return 0;
    const std::array<dataset::Rle, 2> covered{dataset::merge(others), box};
    const dataset::Rle in_box = dataset::merge(covered, true);
    const std::array<dataset::Rle, 2> own{in_box, gt.mask};
    const uint64_t hidden = dataset::area(in_box) - dataset::area(dataset::merge(own, true));
    return static_cast<double>(hidden) / static_cast<double>(box_area);
  }

  // What a disagreement over an annotation is worth when the object is partly hidden: the
  // model's view of it is then more often wrong than the label (full at no cover, none when
  // half its box is covered), and the detail says so.
  static double visibleWeight(double hidden) { return std::max(0.0, 1 - kHiddenWeight * hidden); }
  static std::string hiddenNote(double hidden) {
    return hidden >= kHiddenNoted ? "; partly hidden (" + fixed(100 * hidden, 0) + "% of its box under other annotations)"
                          : std::string();
  }

  // How sure the model is that something is where each unmatched detection is, whatever its
  // class: a hedging model splits one object's probability between classes (a star 0.37, a
  // triangle 0.32, a square 0.26 on one shape), each below `confident`, together well above.
  // Over the unmatched detections drawn on the same object (box IoU >= kSameObject), each
  // class's best score, combined as independent chances (1 - the product of 1 - score: 0.68
  // for the three above). Their sum would be the softmax's own reading of a single proposal;
  // the product is the more cautious of the two, and the one that flagged fewer right labels
  // on the label-check benchmark's seeds.
  // `between`: the detections' box IoU with each other.
  std::vector<double> seenAsAnything(const ImageView& v, const dataset::IouMatrix& between) const {
    const size_t nd = v.dets.size();
    std::vector<double> seen(nd, 0);
    for (size_t d = 0; d < nd; ++d) {
      if (v.det_match[d] >= 0) continue;
      std::map<int64_t, double> best;
      for (size_t e = 0; e < nd; ++e) {
        if (v.det_match[e] >= 0 || between.at(d, e) < kSameObject) continue;
        double& b = best[v.dets[e]->category_id];
        b = std::max(b, v.dets[e]->score);
      }
      double none = 1;
      for (const auto& [category, score] : best) none *= 1 - score;
      seen[d] = 1 - none;
    }
    return seen;
  }

  // What the outline said, when it said much either way.
  std::string outlineNote(double vote, int64_t own, int64_t other) const {
    if (vote >= 0.75) return "; its outline is more like a " + name(other) + "'s (" + fixed(vote) + ")";
    if (vote <= 0.25) return "; its outline is like a " + name(own) + "'s (" + fixed(1 - vote) + ")";
    return {};
  }

  void check(int64_t image, const ImageView& v, std::vector<Mistake>& out) const {
    const size_t nd = v.dets.size(), ng = v.gts.size();
    std::vector<bool> explained(ng, false);  // flagged once already (one entry an annotation)
    // A finding on annotation g, weighed by how much of it is hidden (worked out only for a
    // finding that could be listed).
    const auto addWeighed = [&](Mistake m, size_t g) {
      if (m.score >= opt_.min_score) {
        const double hidden = hiddenShare(v, g);
        m.score *= visibleWeight(hidden);
        m.detail += hiddenNote(hidden);
      }
      add(out, std::move(m));
    };

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
    std::vector<dataset::Box> det_boxes(nd);
    for (size_t d = 0; d < nd; ++d) det_boxes[d] = v.dets[d]->bbox;
    const dataset::IouMatrix between =
        dataset::iou(det_boxes, det_boxes, std::vector<uint8_t>(nd, 0));
    const std::vector<double> seen = seenAsAnything(v, between);
    std::vector<bool> claimed(nd, false);  // part of an object already listed as missing
    for (size_t d = 0; d < nd; ++d) {
      const eval::Detection& det = *v.dets[d];
      const bool sure = det.score >= opt_.confident;
      if (v.det_match[d] >= 0 || claimed[d] || (!sure && seen[d] < opt_.confident)) continue;
      bool in_crowd = false;
      double best_any = 0, inside = 0;
      int loose = -1;
      double loose_overlap = opt_.localization_floor;
      for (size_t g = 0; g < ng; ++g) {
        const eval::GroundTruth& gt = *v.gts[g];
        const double o = v.at(d, g);
        if (gt.iscrowd) {
          // Inside the region by its box: a crowd's mask is its members' pixels, sparse where
          // they are small, and a detection of a few of them covers the gaps between.
          in_crowd = in_crowd || std::max(o, boxShare(det.bbox, gt.bbox)) >= opt_.match_iou;
          continue;
        }
        best_any = std::max(best_any, o);
        inside = std::max(inside, boxShare(det.bbox, gt.bbox));
        if (sure && gt.category_id == det.category_id && v.gt_match[g] < 0 && !explained[g] &&
            o >= loose_overlap) {
          loose = static_cast<int>(g);
          loose_overlap = o;
        }
      }
      if (in_crowd) continue;
      if (loose >= 0) {
        const auto g = static_cast<size_t>(loose);
        explained[g] = true;
        addWeighed(localization(image, *v.gts[g], det, loose_overlap, v.boxAt(d, g), v.maskAt(d, g)), g);
        continue;
      }
      if (best_any >= opt_.match_iou) continue;  // another class's annotation: wrong_class's
      // One entry an object: the other classes' detections of it are this one's.
      for (size_t e = d; e < nd; ++e)
        if (v.det_match[e] < 0 && between.at(d, e) >= kSameObject) claimed[e] = true;
      // A detection mostly inside an annotated object's box is more often the model seeing a
      // part of it (a star's point as a triangle) than an object nobody labelled.
      std::string what = "a " + name(det.category_id) + " detection (score " + fixed(det.score) + ")";
      if (seen[d] > det.score + 0.005) what += ", something at " + fixed(seen[d]) + " with the other classes' there,";
      add(out, {image, std::nullopt, MistakeKind::kMissing,
                seen[d] * (1 - std::max(best_any, kPartDiscount * inside)),
                fromDetection(det, in_.masks),
                what + " that no annotation covers (best overlap " + fixed(best_any) + ")"});
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
        sup = std::max(sup, support(det, gt));
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
        // The outline's own say: the model's reading (as odds) times how much more the
        // annotation's geometry looks like the other class's annotations than like its own.
        const double vote = geometry_.vote(gt, det.category_id);
        const double score = withVote(other * (1 - own), vote);
        addWeighed({image, gt.id, MistakeKind::kWrongClass, score, s,
                    "labelled " + name(gt.category_id) + ", the model sees a " +
                        name(det.category_id) + " (score " + fixed(other) + "; " +
                        name(gt.category_id) + " at most " + fixed(own) + ")" +
                        outlineNote(vote, gt.category_id, det.category_id)},
                   g);
        continue;
      }
      // Spurious only where no confident detection speaks for it.
      Mistake spurious{image, gt.id, MistakeKind::kSpurious, 1 - sup,
                       std::nullopt,
                       "a " + name(gt.category_id) +
                           " annotation the model does not see (support " + fixed(sup) + ")"};
      if (v.gt_match[g] >= 0) {
        // Matched, perhaps only by an unsure detection: the stronger of the two readings.
        const auto d = static_cast<size_t>(v.gt_match[g]);
        Mistake loose = localization(image, gt, *v.dets[d], v.at(d, g), v.boxAt(d, g), v.maskAt(d, g));
        addWeighed(loose.score >= spurious.score ? std::move(loose) : std::move(spurious), g);
        continue;
      }
      addWeighed(std::move(spurious), g);
    }
  }

  Mistake localization(int64_t image, const eval::GroundTruth& gt, const eval::Detection& det,
                       double overlap, double box, double mask) const {
    // How far below the model's usual agreement each measure falls, in its own spread, for
    // objects of this one's size.
    const size_t b = bucket(side(gt));
    const Spread& usual_box = box_[b];
    const Spread& usual_mask = mask_[b];
    // A box the model agrees with around a mask it does not (a coarse or eroded polygon):
    // the gap between the two measures, against its usual size, full at half the mask.
    const double gap = mask >= 0 ? gap_[b].above(box - mask, 0.5) : 0.0;
    // A mask larger or smaller than the model's, or fuller in its box, by more than the
    // model's usual difference for the class (a polygon drawn as its box, an eroded one).
    double shape = 0;
    const ShapeGap sg = mask >= 0 ? ShapeGap::of(gt, det) : ShapeGap{};
    if (sg.known) {
      const auto& usual = usualShape(gt.category_id);
      shape = std::max(usual[0].off(sg.log_area, kShapeFrom, kShapeTo),
                       usual[1].off(sg.fill, kShapeFrom, kShapeTo));
    }
    const double evidence =
        std::max({usual_box.below(box, opt_.localization_floor),
                  mask >= 0 ? usual_mask.below(mask, opt_.localization_floor) : 0.0, gap, shape});
    Suggestion s = fromDetection(det, in_.masks);
    s.category_id = gt.category_id;
    std::string measured = "box IoU " + fixed(box) + " (usually " + fixed(usual_box.median) + ")";
    if (mask >= 0) measured += ", mask IoU " + fixed(mask) + " (usually " + fixed(usual_mask.median) + ")";
    return {image, gt.id, MistakeKind::kLocalization, det.score * evidence, std::move(s),
            "its " + name(gt.category_id) + " detection (score " + fixed(det.score) +
                ") disagrees on the shape: " + measured + (overlap < opt_.match_iou ? "; not matched" : "")};
  }

  const FinderInput& in_;
  FinderOptions opt_;
  LabelGeometry geometry_;
  std::map<int64_t, std::string> names_;
  std::unordered_map<int64_t, std::vector<const eval::GroundTruth*>> gts_;
  std::unordered_map<int64_t, std::vector<const eval::Detection*>> dets_;
  static constexpr double kShapeFrom = 3, kShapeTo = 12;  // in spreads
  static constexpr double kPartDiscount = 0.5;
  static constexpr double kSameObject = 0.7;  // box IoU of two detections of one object
  static constexpr double kHiddenWeight = 2;  // visibleWeight: nothing left at half hidden
  static constexpr double kHiddenNoted = 0.05;  // hidden enough to say so
  static double side(const eval::GroundTruth& g) { return std::sqrt(std::max(0.0, g.bbox[2] * g.bbox[3])); }
  size_t bucket(double s) const { return s < cuts_[0] ? 0 : s < cuts_[1] ? 1 : 2; }

  // The usual log area ratio and fill gap (ShapeGap) of a class's matches; shape_all_ for a
  // class with fewer than kClassMatches.
  static constexpr size_t kClassMatches = 20;
  const std::array<Spread, 2>& usualShape(int64_t category) const {
    const auto it = shape_.find(category);
    return it == shape_.end() ? shape_all_ : it->second;
  }
  std::map<int64_t, std::array<Spread, 2>> shape_;
  std::array<Spread, 2> shape_all_{};

  double typical_ = 0.8;
  std::array<double, 2> cuts_{0, 0};  // the sizes between the thirds
  std::array<Spread, 3> box_, mask_, gap_;  // by size third; gap: box IoU - mask IoU
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
