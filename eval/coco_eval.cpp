#include "eval/coco_eval.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <unordered_map>

namespace mrcnn::eval {
namespace {

// numpy.linspace(start, stop, num) in numpy's own arithmetic, so that thresholds compare
// equal to pycocotools' (summarize() looks .5 and .75 up with ==).
std::vector<double> linspace(double start, double stop, int num) {
  std::vector<double> v(static_cast<std::size_t>(num));
  const double step = (stop - start) / static_cast<double>(num - 1);
  for (int i = 0; i < num; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<double>(i) * step + start;
  v.back() = stop;
  return v;
}

// numpy's pairwise summation (what np.mean uses on a contiguous float64 array), so that
// means agree with pycocotools' to the last bit in the usual case.
double pairwiseSum(const double* a, std::size_t n) {
  if (n < 8) {
    double res = 0.;
    for (std::size_t i = 0; i < n; ++i)
      res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j)
      r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j)
        r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i)
      res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwiseSum(a, n2) + pairwiseSum(a + n2, n - n2);
}

double meanOfValid(const std::vector<double>& values) {
  std::vector<double> valid;
  valid.reserve(values.size());
  for (double v : values) {
    if (v > -1) valid.push_back(v);
  }
  if (valid.empty()) return -1;
  return (0.0 + pairwiseSum(valid.data(), valid.size())) / static_cast<double>(valid.size());
}

int threadCount(int requested) {
  if (requested > 0) return requested;
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs body(i) for i in [0, n) on `threads` threads, in dynamic chunks.
template <class Body>
void parallelFor(std::size_t n, int threads, Body body) {
  if (threads <= 1 || n < 2) {
    for (std::size_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    try {
      for (std::size_t i; !failed && (i = next.fetch_add(1)) < n;)
        body(i);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (auto& th : pool)
    th.join();
  if (error) std::rethrow_exception(error);
}

// The per image, category and area range outcome of pycocotools' evaluateImg, in the form
// accumulate() needs: detections in score order (at most maxDets[-1]), whether each was
// matched to a ground truth (per threshold), whether it is ignored, and how many ground
// truths count.
struct ImageEval {
  std::vector<double> scores;    // D, descending
  std::vector<uint8_t> matched;  // T x D: matched to a ground truth whose id is nonzero
  std::vector<uint8_t> ignored;  // T x D
  std::size_t counted_gts = 0;   // ground truths not ignored
  bool present = false;          // pycocotools' evalImgs entry is not None
};

struct Pair {
  std::vector<const GroundTruth*> gts;  // file order
  std::vector<const Detection*> dts;    // file order, then sorted by score
};

}  // namespace

EvalParams::EvalParams()
    : iou_thresholds(linspace(.5, 0.95, 10)), recall_thresholds(linspace(.0, 1.00, 101)) {}

EvalResult evaluate(const EvalSet& set, IouType type, const EvalParams& params) {
  return evaluate(set, set.detections, type, params);
}

EvalResult evaluate(const EvalSet& set, std::span<const Detection> detections, IouType type,
                    const EvalParams& params) {
  const int threads = threadCount(params.threads);
  std::vector<int64_t> image_ids = set.image_ids;
  std::vector<int64_t> category_ids = set.category_ids;
  std::sort(image_ids.begin(), image_ids.end());
  std::sort(category_ids.begin(), category_ids.end());
  if (std::adjacent_find(image_ids.begin(), image_ids.end()) != image_ids.end()) {
    throw std::invalid_argument("evaluate: duplicate image id");
  }
  if (std::adjacent_find(category_ids.begin(), category_ids.end()) != category_ids.end()) {
    throw std::invalid_argument("evaluate: duplicate category id");
  }
  const std::size_t I = image_ids.size(), K = category_ids.size();
  const std::size_t T = params.iou_thresholds.size(), R = params.recall_thresholds.size();
  const std::size_t A = params.area_ranges.size(), M = params.max_dets.size();
  if (M == 0) throw std::invalid_argument("evaluate: max_dets is empty");
  const std::size_t max_det = static_cast<std::size_t>(params.max_dets.back());

  std::unordered_map<int64_t, std::size_t> image_index, category_index;
  for (std::size_t i = 0; i < I; ++i)
    image_index.emplace(image_ids[i], i);
  for (std::size_t k = 0; k < K; ++k)
    category_index.emplace(category_ids[k], k);

  // Group by (category, image), keeping file order, as pycocotools' _prepare does.
  std::unordered_map<std::size_t, std::size_t> pair_of;  // k * I + i -> index in pairs
  std::vector<Pair> pairs;
  std::vector<std::size_t> pair_keys;
  const auto pairFor = [&](int64_t image, int64_t category) -> Pair* {
    const auto ii = image_index.find(image);
    const auto kk = category_index.find(category);
    if (ii == image_index.end() || kk == category_index.end()) return nullptr;
    const std::size_t key = kk->second * I + ii->second;
    auto [it, inserted] = pair_of.emplace(key, pairs.size());
    if (inserted) {
      pairs.emplace_back();
      pair_keys.push_back(key);
    }
    return &pairs[it->second];
  };
  for (const GroundTruth& g : set.ground_truths) {
    if (Pair* p = pairFor(g.image_id, g.category_id)) p->gts.push_back(&g);
  }
  for (const Detection& d : detections) {
    if (Pair* p = pairFor(d.image_id, d.category_id)) p->dts.push_back(&d);
  }

  // evaluateImg for every pair and area range.
  std::vector<ImageEval> evals(pairs.size() * A);
  parallelFor(pairs.size(), threads, [&](std::size_t pi) {
    Pair& pair = pairs[pi];
    // Detections by score, ties in file order (a stable sort, like numpy's mergesort).
    std::stable_sort(pair.dts.begin(), pair.dts.end(),
                     [](const Detection* a, const Detection* b) { return a->score > b->score; });
    if (pair.dts.size() > max_det) pair.dts.resize(max_det);
    const std::size_t G = pair.gts.size(), D = pair.dts.size();

    std::vector<uint8_t> crowd(G);
    for (std::size_t g = 0; g < G; ++g)
      crowd[g] = pair.gts[g]->iscrowd ? 1 : 0;
    dataset::IouMatrix ious;
    if (G > 0 && D > 0) {
      if (type == IouType::Bbox) {
        std::vector<dataset::Box> dt(D), gt(G);
        for (std::size_t d = 0; d < D; ++d)
          dt[d] = pair.dts[d]->bbox;
        for (std::size_t g = 0; g < G; ++g)
          gt[g] = pair.gts[g]->bbox;
        dataset::iou(std::span<const dataset::Box>(dt), std::span<const dataset::Box>(gt), crowd,
                     ious);
      } else {
        // Pointers, not copies: masks are the bulk of the data.
        std::vector<const dataset::Rle*> dt(D), gt(G);
        for (std::size_t d = 0; d < D; ++d)
          dt[d] = &pair.dts[d]->mask;
        for (std::size_t g = 0; g < G; ++g)
          gt[g] = &pair.gts[g]->mask;
        dataset::iou(std::span<const dataset::Rle* const>(dt),
                     std::span<const dataset::Rle* const>(gt), crowd, ious);
      }
    }

    std::vector<std::size_t> order(G);
    std::vector<uint8_t> gt_ignore(G), sorted_ignore(G);
    std::vector<int64_t> gt_match(T * G);  // detection id matched to each (threshold, gt)
    for (std::size_t a = 0; a < A; ++a) {
      const auto& range = params.area_ranges[a];
      for (std::size_t g = 0; g < G; ++g) {
        const GroundTruth* gt = pair.gts[g];
        gt_ignore[g] = (gt->iscrowd || gt->area < range[0] || gt->area > range[1]) ? 1 : 0;
      }
      // Ground truths not ignored first, each group in file order.
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return gt_ignore[x] < gt_ignore[y]; });
      for (std::size_t g = 0; g < G; ++g)
        sorted_ignore[g] = gt_ignore[order[g]];

      ImageEval& e = evals[pi * A + a];
      e.present = true;
      e.scores.resize(D);
      for (std::size_t d = 0; d < D; ++d)
        e.scores[d] = pair.dts[d]->score;
      e.matched.assign(T * D, 0);
      e.ignored.assign(T * D, 0);
      e.counted_gts = static_cast<std::size_t>(std::count(gt_ignore.begin(), gt_ignore.end(), 0));
      std::fill(gt_match.begin(), gt_match.end(), 0);
      std::vector<int64_t> dt_match(T * D, 0);
      if (!ious.values.empty()) {
        for (std::size_t t = 0; t < T; ++t) {
          for (std::size_t d = 0; d < D; ++d) {
            double best = std::min(params.iou_thresholds[t], 1 - 1e-10);
            std::ptrdiff_t m = -1;
            for (std::size_t g = 0; g < G; ++g) {
              const std::size_t original = order[g];
              // A ground truth already matched is taken again only if it is a crowd.
              if (gt_match[t * G + g] > 0 && !pair.gts[original]->iscrowd) continue;
              // Once matched to a counted ground truth, stop at the ignored ones.
              if (m > -1 && sorted_ignore[static_cast<std::size_t>(m)] == 0 &&
                  sorted_ignore[g] == 1) {
                break;
              }
              const double v = ious.at(d, original);
              if (v < best) continue;
              best = v;
              m = static_cast<std::ptrdiff_t>(g);
            }
            if (m == -1) continue;
            const std::size_t mg = static_cast<std::size_t>(m);
            e.ignored[t * D + d] = sorted_ignore[mg];
            dt_match[t * D + d] = pair.gts[order[mg]]->id;
            gt_match[t * G + mg] = pair.dts[d]->id;
          }
        }
      }
      // Unmatched detections outside the area range are ignored. pycocotools tests "matched"
      // as a nonzero ground-truth id; so do we.
      for (std::size_t d = 0; d < D; ++d) {
        const double area = pair.dts[d]->area;
        const bool outside = area < range[0] || area > range[1];
        for (std::size_t t = 0; t < T; ++t) {
          const bool matched = dt_match[t * D + d] != 0;
          e.matched[t * D + d] = matched ? 1 : 0;
          if (!matched && outside) e.ignored[t * D + d] = 1;
        }
      }
    }
  });

  // For each category: the pairs of each image in image order.
  std::vector<std::vector<std::size_t>> pairs_of_category(K);
  {
    std::vector<std::size_t> by_key(pairs.size());
    std::iota(by_key.begin(), by_key.end(), 0);
    std::sort(by_key.begin(), by_key.end(),
              [&](std::size_t x, std::size_t y) { return pair_keys[x] < pair_keys[y]; });
    for (std::size_t p : by_key)
      pairs_of_category[pair_keys[p] / I].push_back(p);
  }

  EvalResult result;
  result.iou_type = type;
  result.params = params;
  result.category_ids = category_ids;
  result.T = T;
  result.R = R;
  result.K = K;
  result.A = A;
  result.M = M;
  result.precision.assign(T * R * K * A * M, -1);
  result.scores.assign(T * R * K * A * M, -1);
  result.recall.assign(T * K * A * M, -1);
  constexpr double kEps = std::numeric_limits<double>::epsilon();  // np.spacing(1)

  // accumulate()
  parallelFor(K * A, threads, [&](std::size_t ka) {
    const std::size_t k = ka / A, a = ka % A;
    std::vector<double> scores;
    std::vector<std::size_t> origin_eval, origin_index, order;
    std::vector<double> tp_sum, fp_sum, rc, pr;
    for (std::size_t m = 0; m < M; ++m) {
      const std::size_t limit = static_cast<std::size_t>(params.max_dets[m]);
      scores.clear();
      origin_eval.clear();
      origin_index.clear();
      std::size_t npig = 0;
      bool any = false;
      for (std::size_t p : pairs_of_category[k]) {
        const ImageEval& e = evals[p * A + a];
        if (!e.present) continue;
        any = true;
        npig += e.counted_gts;
        const std::size_t n = std::min(limit, e.scores.size());
        for (std::size_t d = 0; d < n; ++d) {
          scores.push_back(e.scores[d]);
          origin_eval.push_back(p * A + a);
          origin_index.push_back(d);
        }
      }
      if (!any || npig == 0) continue;
      const std::size_t nd = scores.size();
      order.resize(nd);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return scores[x] > scores[y]; });
      tp_sum.resize(nd);
      fp_sum.resize(nd);
      rc.resize(nd);
      pr.resize(nd);
      for (std::size_t t = 0; t < T; ++t) {
        double tp = 0, fp = 0;
        for (std::size_t j = 0; j < nd; ++j) {
          const ImageEval& e = evals[origin_eval[order[j]]];
          const std::size_t D = e.scores.size();
          const std::size_t idx = t * D + origin_index[order[j]];
          const bool ignored = e.ignored[idx] != 0;
          const bool matched = e.matched[idx] != 0;
          if (matched && !ignored) tp += 1;
          if (!matched && !ignored) fp += 1;
          tp_sum[j] = tp;
          fp_sum[j] = fp;
        }
        for (std::size_t j = 0; j < nd; ++j) {
          rc[j] = tp_sum[j] / static_cast<double>(npig);
          pr[j] = tp_sum[j] / (fp_sum[j] + tp_sum[j] + kEps);
        }
        result.recall[((t * K + k) * A + a) * M + m] = nd ? rc[nd - 1] : 0;
        // Precision envelope: each point takes the best precision at any higher recall.
        for (std::size_t j = nd; j-- > 1;) {
          if (pr[j] > pr[j - 1]) pr[j - 1] = pr[j];
        }
        for (std::size_t r = 0; r < R; ++r) {
          const std::size_t pi = static_cast<std::size_t>(
              std::lower_bound(rc.begin(), rc.begin() + static_cast<std::ptrdiff_t>(nd),
                               params.recall_thresholds[r]) -
              rc.begin());
          const std::size_t flat = (((t * R + r) * K + k) * A + a) * M + m;
          // Past the last recall reached, precision stays 0 (pycocotools leaves q at 0).
          result.precision[flat] = pi < nd ? pr[pi] : 0;
          result.scores[flat] = pi < nd ? scores[order[pi]] : 0;
        }
      }
    }
  });

  // summarize()
  const auto areaIndex = [&](const std::string& label) {
    for (std::size_t a = 0; a < A; ++a) {
      if (params.area_labels[a] == label) return static_cast<std::ptrdiff_t>(a);
    }
    return std::ptrdiff_t{-1};
  };
  const auto maxDetIndex = [&](int value) {
    for (std::size_t m = 0; m < M; ++m) {
      if (params.max_dets[m] == value) return static_cast<std::ptrdiff_t>(m);
    }
    return std::ptrdiff_t{-1};
  };
  const auto summarizeOne = [&](bool ap, double iou_thr, bool any_thr, const std::string& area,
                                int max_dets) {
    const std::ptrdiff_t a = areaIndex(area), m = maxDetIndex(max_dets);
    std::vector<double> selected;
    if (a < 0 || m < 0) return -1.0;
    for (std::size_t t = 0; t < T; ++t) {
      if (!any_thr && params.iou_thresholds[t] != iou_thr) continue;
      if (ap) {
        for (std::size_t r = 0; r < R; ++r) {
          for (std::size_t k = 0; k < K; ++k) {
            selected.push_back(result.precisionAt(t, r, k, static_cast<std::size_t>(a),
                                                  static_cast<std::size_t>(m)));
          }
        }
      } else {
        for (std::size_t k = 0; k < K; ++k) {
          selected.push_back(
              result.recallAt(t, k, static_cast<std::size_t>(a), static_cast<std::size_t>(m)));
        }
      }
    }
    return meanOfValid(selected);
  };
  const int last = params.max_dets.back();
  const int d0 = params.max_dets[0], d1 = M > 1 ? params.max_dets[1] : last;
  result.stats = {
      summarizeOne(true, 0, true, "all", last),     summarizeOne(true, .5, false, "all", last),
      summarizeOne(true, .75, false, "all", last),  summarizeOne(true, 0, true, "small", last),
      summarizeOne(true, 0, true, "medium", last),  summarizeOne(true, 0, true, "large", last),
      summarizeOne(false, 0, true, "all", d0),      summarizeOne(false, 0, true, "all", d1),
      summarizeOne(false, 0, true, "all", last),    summarizeOne(false, 0, true, "small", last),
      summarizeOne(false, 0, true, "medium", last), summarizeOne(false, 0, true, "large", last)};

  // Per category: AP over thresholds and recall points, area all, the last maxDets.
  const std::ptrdiff_t all = areaIndex("all");
  result.per_category_ap.assign(K, -1);
  if (all >= 0) {
    for (std::size_t k = 0; k < K; ++k) {
      std::vector<double> values;
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t r = 0; r < R; ++r) {
          values.push_back(result.precisionAt(t, r, k, static_cast<std::size_t>(all), M - 1));
        }
      }
      result.per_category_ap[k] = meanOfValid(values);
    }
  }
  return result;
}

std::string summaryText(const EvalResult& result) {
  const EvalParams& p = result.params;
  const int last = p.max_dets.back();
  const int d0 = p.max_dets[0], d1 = p.max_dets.size() > 1 ? p.max_dets[1] : last;
  struct Line {
    bool ap;
    const char* iou;
    const char* area;
    int dets;
  };
  const Line lines[12] = {
      {true, "0.50:0.95", "all", last},     {true, "0.50", "all", last},
      {true, "0.75", "all", last},          {true, "0.50:0.95", "small", last},
      {true, "0.50:0.95", "medium", last},  {true, "0.50:0.95", "large", last},
      {false, "0.50:0.95", "all", d0},      {false, "0.50:0.95", "all", d1},
      {false, "0.50:0.95", "all", last},    {false, "0.50:0.95", "small", last},
      {false, "0.50:0.95", "medium", last}, {false, "0.50:0.95", "large", last}};
  std::string out;
  char buffer[160];
  for (int i = 0; i < 12; ++i) {
    const Line& l = lines[i];
    std::snprintf(buffer, sizeof buffer,
                  " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3d ] = %0.3f\n",
                  l.ap ? "Average Precision" : "Average Recall", l.ap ? "(AP)" : "(AR)", l.iou,
                  l.area, l.dets, result.stats[static_cast<std::size_t>(i)]);
    out += buffer;
  }
  return out;
}

}  // namespace mrcnn::eval
