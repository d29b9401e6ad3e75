#include "eval/tide.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "eval/image_items.h"

namespace mrcnn::eval {
namespace {

// TIDE's AP bookkeeping: per class (in the order first seen) the ground-truth count and the
// detections as (score, true positive), in the order they were added, which breaks ties.
class ApData {
 public:
  void addGroundTruth(int64_t cls, int64_t n) { entry(cls).ground_truth += n; }
  void push(int64_t cls, double score, bool tp) { entry(cls).points.push_back({score, tp}); }

  // Mean over the classes that have detections or ground truth.
  double meanAp() const {
    double sum = 0;
    std::size_t n = 0;
    for (const Entry& e : entries_) {
      if (e.points.empty() && e.ground_truth == 0) continue;
      sum += classAp(e);
      ++n;
    }
    return n ? sum / static_cast<double>(n) : 0.0;
  }

  struct Entry {
    int64_t cls = 0;
    int64_t ground_truth = 0;
    std::vector<std::pair<double, bool>> points;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  Entry& entry(int64_t cls) {
    const auto [it, added] = index_.emplace(cls, entries_.size());
    if (added) entries_.push_back({cls, 0, {}});
    return entries_[it->second];
  }

  // Precision by score (stable), made non-increasing from the right, read at recall
  // 0, .01, ..., 1 (the first point reaching it, 0 past the last), averaged, in points.
  static double classAp(const Entry& e) {
    if (e.ground_truth == 0) return 0;
    std::vector<std::pair<double, bool>> points = e.points;
    std::stable_sort(points.begin(), points.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<double> precision, recall;
    precision.reserve(points.size());
    recall.reserve(points.size());
    int64_t tp = 0, fp = 0;
    for (const auto& [score, positive] : points) {
      (positive ? tp : fp) += 1;
      precision.push_back(static_cast<double>(tp) / static_cast<double>(tp + fp));
      recall.push_back(static_cast<double>(tp) / static_cast<double>(e.ground_truth));
    }
    for (std::size_t i = precision.size(); i-- > 1;)
      precision[i - 1] = std::max(precision[i - 1], precision[i]);
    double sum = 0;
    for (int bar = 0; bar <= 100; ++bar) {
      const double x = bar / 100.0;
      const auto at = std::lower_bound(recall.begin(), recall.end(), x) - recall.begin();
      if (static_cast<std::size_t>(at) < precision.size())
        sum += precision[static_cast<std::size_t>(at)];
    }
    return sum / 101.0 * 100.0;
  }

  std::vector<Entry> entries_;
  std::unordered_map<int64_t, std::size_t> index_;
};

struct ErrorRecord {
  TideError type = TideError::Bkg;
  int64_t image_id = 0;
  int64_t cls = 0;  // the detection's class; the object's for Miss
  double score = 0;
  bool counted = false;  // the detection is in the AP (not ignored by a crowd region)
  // Loc and Cls: the object whose best fix this may be (-1: already matched), and the class
  // the fixed detection takes.
  int64_t target = -1;
  int64_t fixed_cls = 0;
};

// Everything a TIDE run keeps: the AP data, the errors, per object the error that fixes it.
struct Run {
  ApData ap;
  std::vector<ErrorRecord> errors;
  std::vector<double> best_score;  // per object (global index), TIDE's BestGTMatch
  std::vector<int64_t> best_error;
  std::unordered_map<int64_t, int64_t> missed;  // per class, objects no detection matched
};

double argmaxRow(const std::vector<double>& row, std::size_t& at) {
  at = 0;
  for (std::size_t g = 1; g < row.size(); ++g)
    if (row[g] > row[at]) at = g;
  return row.empty() ? 0.0 : row[at];
}

void evalImage(Run& run, const ImageItems& items, IouType type, double pos, double bg) {
  const auto& gts = items.objects;
  const auto& dts = items.detections;
  const std::size_t first_object = run.best_score.size();
  run.best_score.resize(first_object + gts.size(), -1.0);
  run.best_error.resize(first_object + gts.size(), -1);
  for (const GroundTruth* g : gts)
    run.ap.addGroundTruth(g->category_id, 1);

  std::vector<int> matched_by(gts.size(), -1);  // detection matched to each object
  std::vector<bool> usable(gts.size(), false);  // a Loc/Cls error could fix it
  if (!dts.empty()) {
    const dataset::IouMatrix iou = detectionIous(dts, gts, type, false);
    const auto same = [&](std::size_t d, std::size_t g) {
      return dts[d]->category_id == gts[g]->category_id;
    };
    // Greedy matching by score on same-class IoU; a matched object leaves the pool.
    enum class State { Negative, Positive, Ignored };
    std::vector<State> state(dts.size(), State::Negative);
    std::vector<double> row(gts.size());
    for (std::size_t d = 0; d < dts.size() && !gts.empty(); ++d) {
      for (std::size_t g = 0; g < gts.size(); ++g)
        row[g] = matched_by[g] < 0 && same(d, g) ? iou.at(d, g) : 0.0;
      std::size_t g = 0;
      if (argmaxRow(row, g) >= pos) {
        state[d] = State::Positive;
        matched_by[g] = static_cast<int>(d);
      }
    }
    // Crowd regions ignore the unmatched detections of their class they overlap.
    const dataset::IouMatrix crowd = detectionIous(dts, items.crowds, type, true);
    for (std::size_t c = 0; c < items.crowds.size(); ++c) {
      for (std::size_t d = 0; d < dts.size(); ++d) {
        if (state[d] != State::Positive && crowd.at(d, c) > pos &&
            items.crowds[c]->category_id == dts[d]->category_id)
          state[d] = State::Ignored;
      }
    }

    for (std::size_t d = 0; d < dts.size(); ++d) {
      const Detection& det = *dts[d];
      if (state[d] != State::Ignored)
        run.ap.push(det.category_id, det.score, state[d] == State::Positive);
      if (state[d] == State::Positive) continue;
      ErrorRecord e{TideError::Bkg,
                    items.image_id,
                    det.category_id,
                    det.score,
                    state[d] != State::Ignored,
                    -1,
                    det.category_id};
      const auto classify = [&]() {
        if (gts.empty()) return;  // Bkg
        std::size_t g = 0;
        for (std::size_t j = 0; j < gts.size(); ++j)
          row[j] = same(d, j) ? iou.at(d, j) : 0.0;
        if (const double v = argmaxRow(row, g); bg <= v && v <= pos) {
          e.type = TideError::Loc;
          e.target = matched_by[g] < 0 ? static_cast<int64_t>(first_object + g) : -1;
          return;
        }
        for (std::size_t j = 0; j < gts.size(); ++j)
          row[j] = same(d, j) ? 0.0 : iou.at(d, j);
        if (argmaxRow(row, g) >= pos) {
          e.type = TideError::Cls;
          e.target = matched_by[g] < 0 ? static_cast<int64_t>(first_object + g) : -1;
          e.fixed_cls = gts[g]->category_id;
          return;
        }
        for (std::size_t j = 0; j < gts.size(); ++j)
          row[j] = same(d, j) && matched_by[j] >= 0 ? iou.at(d, j) : 0.0;
        if (argmaxRow(row, g) >= pos) {
          e.type = TideError::Dupe;
          return;
        }
        for (std::size_t j = 0; j < gts.size(); ++j)
          row[j] = iou.at(d, j);
        e.type = argmaxRow(row, g) <= bg ? TideError::Bkg : TideError::Both;
      };
      classify();
      if (e.target >= 0) {
        const auto t = static_cast<std::size_t>(e.target);
        usable[t - first_object] = true;
        if (run.best_score[t] < e.score) {
          run.best_score[t] = e.score;
          run.best_error[t] = static_cast<int64_t>(run.errors.size());
        }
      }
      run.errors.push_back(e);
    }
  }
  for (std::size_t g = 0; g < gts.size(); ++g) {
    if (matched_by[g] >= 0) continue;
    run.missed[gts[g]->category_id] += 1;
    if (!usable[g]) {
      run.errors.push_back({TideError::Miss, items.image_id, gts[g]->category_id, 0, false, -1,
                            gts[g]->category_id});
    }
  }
}

// The AP with the errors of type `fix` fixed (none: no type), as TIDE's fix_errors builds
// it: errors first, then the true positives; `perfect_ranking` scores true positives 1 and
// the rest 0, `drop_missed` removes every missed object.
double fixedAp(const Run& run, const TideError* fix, bool perfect_ranking = false,
               bool drop_missed = false) {
  std::unordered_map<int64_t, int64_t> ground_truth;
  for (const auto& e : run.ap.entries())
    ground_truth[e.cls] = e.ground_truth;
  ApData out;
  const auto push = [&](int64_t cls, double score, bool tp) {
    if (perfect_ranking) score = tp ? 1.0 : 0.0;
    out.push(cls, score, tp);
  };
  for (std::size_t i = 0; i < run.errors.size(); ++i) {
    const ErrorRecord& e = run.errors[i];
    if (fix && e.type == *fix) {
      if (e.type == TideError::Miss) {
        ground_truth[e.cls] -= 1;
      } else if (e.target >= 0 &&
                 run.best_error[static_cast<std::size_t>(e.target)] == static_cast<int64_t>(i)) {
        push(e.fixed_cls, e.score, true);
      }
    } else if (e.counted) {
      push(e.cls, e.score, false);
    }
  }
  for (const auto& e : run.ap.entries())
    for (const auto& [score, tp] : e.points)
      if (tp) push(e.cls, score, true);
  for (const auto& e : run.ap.entries()) {
    int64_t n = ground_truth[e.cls];
    if (drop_missed) {
      const auto m = run.missed.find(e.cls);
      if (m != run.missed.end()) n -= m->second;
    }
    out.addGroundTruth(e.cls, n);
  }
  return out.meanAp();
}

}  // namespace

TideResult tideErrors(const EvalSet& set, std::span<const Detection> detections, IouType type,
                      double pos_iou, double background_iou, int max_dets) {
  TideResult result;
  result.pos_iou = pos_iou;
  result.background_iou = background_iou;
  result.max_dets = max_dets;
  Run run;
  for (const ImageItems& items :
       groupByImage(set, detections, -std::numeric_limits<double>::infinity(),
                    static_cast<std::size_t>(std::max(max_dets, 0))))
    evalImage(run, items, type, pos_iou, background_iou);

  result.ap = run.ap.meanAp();
  for (std::size_t t = 0; t < kTideErrorNames.size(); ++t) {
    const auto type_t = static_cast<TideError>(t);
    result.main_dap[t] = std::max(fixedAp(run, &type_t) - result.ap, 0.0);
  }
  result.false_positive_dap = fixedAp(run, nullptr, /*perfect_ranking=*/true) - result.ap;
  result.false_negative_dap = fixedAp(run, nullptr, false, /*drop_missed=*/true) - result.ap;

  std::vector<int64_t> order;
  std::unordered_map<int64_t, std::size_t> image_at;
  for (const ErrorRecord& e : run.errors) {
    const auto t = static_cast<std::size_t>(e.type);
    result.counts[t] += 1;
    const auto [it, added] = image_at.emplace(e.image_id, result.images.size());
    if (added) result.images.push_back({e.image_id, {}, 0});
    result.images[it->second].counts[t] += 1;
    result.images[it->second].total += 1;
  }
  std::stable_sort(result.images.begin(), result.images.end(),
                   [](const TideImage& a, const TideImage& b) { return a.total > b.total; });
  return result;
}

std::string tideSummaryText(const TideResult& t) {
  std::string out;
  char cell[64];
  std::snprintf(cell, sizeof cell, "TIDE errors at IoU %.2f (AP %.2f), dAP:", t.pos_iou, t.ap);
  out += cell;
  for (std::size_t i = 0; i < kTideErrorNames.size(); ++i) {
    std::snprintf(cell, sizeof cell, "  %s %.2f", std::string(kTideErrorNames[i]).c_str(),
                  t.main_dap[i]);
    out += cell;
  }
  std::snprintf(cell, sizeof cell, "\n  special dAP:  FalsePos %.2f  FalseNeg %.2f\n",
                t.false_positive_dap, t.false_negative_dap);
  return out + cell;
}

}  // namespace mrcnn::eval
