#include "engine/eval/confusion.h"

#include <algorithm>
#include <map>

#include "dataset/rle.h"

namespace mrcnn::eval {
namespace {

struct ImageItems {
  std::vector<const GroundTruth*> objects, crowds;
  std::vector<const Detection*> detections;
};

// IoU of each detection against each ground truth of `gts` (crowd rule when `crowd`).
dataset::IouMatrix ious(const std::vector<const Detection*>& dts,
                        const std::vector<const GroundTruth*>& gts, IouType type, bool crowd) {
  dataset::IouMatrix m;
  const std::vector<uint8_t> flags(gts.size(), crowd ? 1 : 0);
  if (type == IouType::Bbox) {
    std::vector<dataset::Box> d, g;
    for (const Detection* x : dts)
      d.push_back(x->bbox);
    for (const GroundTruth* x : gts)
      g.push_back(x->bbox);
    dataset::iou(std::span<const dataset::Box>(d), std::span<const dataset::Box>(g), flags, m);
  } else {
    std::vector<const dataset::Rle*> d, g;
    for (const Detection* x : dts)
      d.push_back(&x->mask);
    for (const GroundTruth* x : gts)
      g.push_back(&x->mask);
    dataset::iou(std::span<const dataset::Rle* const>(d), std::span<const dataset::Rle* const>(g),
                 flags, m);
  }
  return m;
}

}  // namespace

ConfusionMatrix confusionMatrix(const EvalSet& set, std::span<const Detection> detections,
                                IouType type, double iou, double score) {
  ConfusionMatrix cm;
  cm.category_ids = set.category_ids;
  std::sort(cm.category_ids.begin(), cm.category_ids.end());
  cm.iou = iou;
  cm.score = score;
  const std::size_t K = cm.category_ids.size();
  cm.counts.assign((K + 1) * (K + 1), 0);
  std::map<int64_t, std::size_t> class_of;
  for (std::size_t k = 0; k < K; ++k)
    class_of[cm.category_ids[k]] = k;

  std::map<int64_t, ImageItems> images;
  for (int64_t id : set.image_ids)
    images[id];
  for (const GroundTruth& g : set.ground_truths) {
    const auto image = images.find(g.image_id);
    if (image == images.end() || !class_of.count(g.category_id)) continue;
    (g.iscrowd ? image->second.crowds : image->second.objects).push_back(&g);
  }
  for (const Detection& d : detections) {
    const auto image = images.find(d.image_id);
    if (image == images.end() || !class_of.count(d.category_id) || d.score < score) continue;
    image->second.detections.push_back(&d);
  }

  for (auto& [image_id, items] : images) {
    auto& dts = items.detections;
    std::stable_sort(dts.begin(), dts.end(),
                     [](const Detection* a, const Detection* b) { return a->score > b->score; });
    const dataset::IouMatrix with_objects = ious(dts, items.objects, type, false);
    const dataset::IouMatrix with_crowds = ious(dts, items.crowds, type, true);
    std::vector<bool> matched(items.objects.size(), false);
    for (std::size_t d = 0; d < dts.size(); ++d) {
      const std::size_t predicted = class_of.at(dts[d]->category_id);
      std::size_t best = items.objects.size();
      double best_iou = iou;
      for (std::size_t g = 0; g < items.objects.size(); ++g) {
        const double v = with_objects.at(d, g);
        if (!matched[g] && (v > best_iou || (v == best_iou && best == items.objects.size()))) {
          best = g;
          best_iou = v;
        }
      }
      if (best < items.objects.size()) {
        matched[best] = true;
        cm.counts[class_of.at(items.objects[best]->category_id) * (K + 1) + predicted] += 1;
        continue;
      }
      bool on_crowd = false;
      for (std::size_t g = 0; g < items.crowds.size() && !on_crowd; ++g)
        on_crowd = with_crowds.at(d, g) >= iou;
      if (!on_crowd) cm.counts[K * (K + 1) + predicted] += 1;
    }
    for (std::size_t g = 0; g < items.objects.size(); ++g) {
      if (!matched[g]) cm.counts[class_of.at(items.objects[g]->category_id) * (K + 1) + K] += 1;
    }
  }
  return cm;
}

}  // namespace mrcnn::eval
