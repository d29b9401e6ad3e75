#include "eval/image_items.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace mrcnn::eval {

std::vector<ImageItems> groupByImage(const EvalSet& set, std::span<const Detection> detections,
                                     double min_score, std::size_t max_detections) {
  std::vector<ImageItems> images(set.image_ids.size());
  std::unordered_map<int64_t, std::size_t> index;
  for (std::size_t i = 0; i < set.image_ids.size(); ++i) {
    images[i].image_id = set.image_ids[i];
    index.emplace(set.image_ids[i], i);
  }
  const std::unordered_set<int64_t> categories(set.category_ids.begin(), set.category_ids.end());
  for (const GroundTruth& g : set.ground_truths) {
    const auto image = index.find(g.image_id);
    if (image == index.end() || !categories.count(g.category_id)) continue;
    ImageItems& items = images[image->second];
    (g.iscrowd ? items.crowds : items.objects).push_back(&g);
  }
  for (const Detection& d : detections) {
    const auto image = index.find(d.image_id);
    if (image == index.end() || !categories.count(d.category_id) || d.score < min_score) continue;
    images[image->second].detections.push_back(&d);
  }
  for (ImageItems& items : images) {
    auto& dts = items.detections;
    std::stable_sort(dts.begin(), dts.end(),
                     [](const Detection* a, const Detection* b) { return a->score > b->score; });
    if (max_detections > 0 && dts.size() > max_detections) dts.resize(max_detections);
  }
  return images;
}

dataset::IouMatrix detectionIous(const std::vector<const Detection*>& dts,
                                 const std::vector<const GroundTruth*>& gts, IouType type,
                                 bool crowd) {
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

}  // namespace mrcnn::eval
