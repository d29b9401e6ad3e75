#include "eval/confusion.h"

#include <algorithm>
#include <map>

#include "eval/image_items.h"

namespace mrcnn::eval {

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

  cm.images.assign(cm.counts.size(), {});
  const auto count = [&](std::size_t row, std::size_t col, int64_t image_id) {
    const std::size_t cell = row * (K + 1) + col;
    cm.counts[cell] += 1;
    if (cm.images[cell].empty() || cm.images[cell].back() != image_id)
      cm.images[cell].push_back(image_id);
  };

  for (const ImageItems& items : groupByImage(set, detections, score)) {
    const auto& dts = items.detections;
    const dataset::IouMatrix with_objects = detectionIous(dts, items.objects, type, false);
    const dataset::IouMatrix with_crowds = detectionIous(dts, items.crowds, type, true);
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
        count(class_of.at(items.objects[best]->category_id), predicted, items.image_id);
        continue;
      }
      bool on_crowd = false;
      for (std::size_t g = 0; g < items.crowds.size() && !on_crowd; ++g)
        on_crowd = with_crowds.at(d, g) >= iou;
      if (!on_crowd) count(K, predicted, items.image_id);
    }
    for (std::size_t g = 0; g < items.objects.size(); ++g) {
      if (!matched[g]) count(class_of.at(items.objects[g]->category_id), K, items.image_id);
    }
  }
  return cm;
}

}  // namespace mrcnn::eval
