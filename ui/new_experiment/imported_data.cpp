#include "ui/new_experiment/imported_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "dataset/coco/coco.h"

namespace mrcnn::ui {
namespace {

namespace fs = std::filesystem;

// The value at the middle of the counted values (the lower one of an even count).
uint32_t weightedMedian(std::vector<std::pair<uint32_t, int64_t>> values) {
  std::sort(values.begin(), values.end());
  int64_t total = 0;
  for (const auto& v : values)
    total += v.second;
  int64_t seen = 0;
  for (const auto& [value, count] : values) {
    seen += count;
    if (2 * seen >= total) return value;
  }
  return values.empty() ? 0 : values.back().first;
}

int roundUpTo64(double side) {
  constexpr int kStride = 64;  // 2^max_level with the levels the wizard writes (2 to 6)
  return std::max(128, static_cast<int>(std::ceil(side / kStride)) * kStride);
}

}  // namespace

std::pair<int, int> suggestedCanvas(
    const std::vector<std::pair<std::pair<uint32_t, uint32_t>, int64_t>>& sizes) {
  std::vector<std::pair<uint32_t, int64_t>> widths, heights;
  for (const auto& [size, count] : sizes) {
    widths.emplace_back(size.first, count);
    heights.emplace_back(size.second, count);
  }
  double w = weightedMedian(widths), h = weightedMedian(heights);
  if (w <= 0 || h <= 0) return {832, 1344};  // no image read: TAO's canvas
  // Larger photos are shrunk to TAO's canvas: beyond it a CPU or a small GPU trains slowly
  // and the backbone's receptive field gains little.
  const double long_side = std::max(w, h), short_side = std::min(w, h);
  const double scale = std::min({1.0, 1344.0 / long_side, 832.0 / short_side});
  w *= scale;
  h *= scale;
  return {roundUpTo64(h), roundUpTo64(w)};
}

std::pair<std::string, std::string> chooseSplits(const dataset::import::ImportSummary& summary) {
  // A split the import left empty (a fraction too small for a few images) trains and
  // validates nothing: it is passed over.
  const auto has = [&](const std::string& name) {
    const auto it = summary.splits.find(name);
    return it != summary.splits.end() && it->second.images > 0;
  };
  std::string train, val;
  if (has("train")) {
    train = "train";
  } else {
    uint64_t most = 0;
    for (const auto& [name, counts] : summary.splits) {
      if (counts.images > most) {
        train = name;
        most = counts.images;
      }
    }
  }
  for (const char* name : {"val", "valid", "validation", "test"}) {
    if (name != train && has(name)) {
      val = name;
      break;
    }
  }
  if (val.empty()) {
    for (const auto& [name, counts] : summary.splits) {
      if (name != train && counts.images > 0) {
        val = name;
        break;
      }
    }
  }
  return {train, val};
}

ImportedData examineImport(dataset::import::ImportSummary summary) {
  ImportedData d;
  d.dataset_dir = summary.output_dir;
  std::tie(d.train_split, d.val_split) = chooseSplits(summary);
  const auto json_of = [&](const std::string& split) {
    return d.dataset_dir / "annotations" / ("instances_" + split + ".json");
  };
  dataset::CocoLoadOptions options;
  options.threads = 1;  // the other core stays with the window
  if (d.train_split.empty()) {
    throw std::runtime_error(d.dataset_dir.string() +
                             ": the import kept no image to train on (see import_report.json "
                             "there for what was skipped and why)");
  }
  std::optional<dataset::CocoDataset> train, val;
  d.train_json = json_of(d.train_split);
  train = dataset::loadCoco(d.train_json, options);
  d.train_images = static_cast<int64_t>(train->images().size());
  if (!d.val_split.empty()) {
    d.val_json = json_of(d.val_split);
    val = dataset::loadCoco(d.val_json, options);
    d.val_images = static_cast<int64_t>(val->images().size());
  }

  // The canvas from the training images, then the check with the anchors the spec will have
  // on that canvas, so that its coverage and suggestion speak of the run to come.
  std::map<std::pair<uint32_t, uint32_t>, int64_t> counted;
  if (train) {
    for (const dataset::CocoImage& image : train->images())
      ++counted[{image.width, image.height}];
  }
  const auto [height, width] = suggestedCanvas({counted.begin(), counted.end()});
  d.image_height = height;
  d.image_width = width;
  d.anchors.canvas_height = height;
  d.anchors.canvas_width = width;

  std::vector<dataset::LabeledSet> sets;
  if (train) sets.push_back({"train", d.train_json.string(), &*train});
  if (val) sets.push_back({"val", d.val_json.string(), &*val});
  const auto num_classes = static_cast<int64_t>(summary.categories.size() + 1);
  d.stats = dataset::datasetStats(sets, d.anchors, num_classes);
  if (const dataset::SetStats* s = d.trainStats();
      s && s->anchors.share_all < 0.9 && s->anchors.suggested_pair) {
    d.suggested_pair = s->anchors.suggested_pair;
  }
  d.summary = std::move(summary);
  return d;
}

}  // namespace mrcnn::ui
