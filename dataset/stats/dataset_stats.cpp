#include "dataset/stats/dataset_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "io/json_writer.h"

namespace mrcnn::dataset {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kRareInstances = 10;

Histogram histogram(std::vector<double> edges) {
  Histogram h;
  h.counts.assign(edges.size() - 1, 0);
  h.edges = std::move(edges);
  return h;
}

void count(Histogram& h, double v) {
  if (!(v >= h.edges.front())) return;
  auto it = std::upper_bound(h.edges.begin(), h.edges.end(), v);
  auto bin = static_cast<size_t>(it - h.edges.begin()) - 1;
  h.counts[std::min(bin, h.counts.size() - 1)] += 1;
}

// COCO's size bucket of an annotation: its area as written (the box's when there is none).
int sizeBucket(const CocoAnnotation& a) {
  const double area = std::isnan(a.area) ? a.bbox[2] * a.bbox[3] : a.area;
  return area < 32.0 * 32.0 ? 0 : area < 96.0 * 96.0 ? 1 : 2;
}

double resizeScale(const CocoImage& image, const AnchorCoverageOptions& o) {
  const double h = image.height, w = image.width;
  if (o.shorter_side) return std::min(o.min_size / std::min(h, w), o.max_size / std::max(h, w));
  return std::min(o.canvas_height / h, o.canvas_width / w);
}

double overlap(double c1, double l1, double c2, double l2) {
  return std::max(0.0, std::min(c1 + l1 / 2, c2 + l2 / 2) - std::max(c1 - l1 / 2, c2 - l2 / 2));
}

struct ScaledBox {
  double cx, cy, w, h;
  int bucket;
};

AnchorCoverage coverage(const std::vector<ScaledBox>& boxes, const AnchorCoverageOptions& o) {
  AnchorCoverage c;
  c.positive_iou = o.positive_iou;
  std::vector<const ScaledBox*> missed;
  for (const ScaledBox& b : boxes) {
    c.boxes[static_cast<size_t>(b.bucket)] += 1;
    if (bestAnchorIou(b.cx, b.cy, b.w, b.h, o, o.aspect_pairs) >= o.positive_iou) {
      c.covered[static_cast<size_t>(b.bucket)] += 1;
    } else {
      missed.push_back(&b);
    }
  }
  int64_t all = 0, covered = 0;
  for (size_t i = 0; i < 3; ++i) {
    c.share[i] = c.boxes[i] ? static_cast<double>(c.covered[i]) / c.boxes[i] : 1.0;
    all += c.boxes[i];
    covered += c.covered[i];
  }
  c.share_all = all ? static_cast<double>(covered) / all : 1.0;
  // One more aspect ratio (width / height) from 1/4 to 4, area-preserving factors, away from
  // the ratios there are: the one that covers the most of the missed boxes (the closest fit,
  // by the sum of their best IoUs, on ties).
  int64_t best_gain = 0;
  double best_fit = 0;
  for (double r : {0.25, 1.0 / 3, 0.5, 2.0 / 3, 1.5, 2.0, 3.0, 4.0, 1.0}) {
    bool near = false;
    for (const auto& [pw, ph] : o.aspect_pairs)
      near |= std::abs(std::log(pw / ph) - std::log(r)) < 0.2;
    if (near) continue;
    const std::vector<std::pair<double, double>> one = {{std::sqrt(r), 1 / std::sqrt(r)}};
    int64_t gain = 0;
    double fit = 0;
    for (const ScaledBox* b : missed) {
      const double iou = bestAnchorIou(b->cx, b->cy, b->w, b->h, o, one);
      gain += iou >= o.positive_iou;
      fit += iou;
    }
    if (gain > best_gain || (gain > 0 && gain == best_gain && fit > best_fit)) {
      best_gain = gain;
      best_fit = fit;
      c.suggested_pair =
          std::pair{std::round(one[0].first * 100) / 100, std::round(one[0].second * 100) / 100};
    }
  }
  c.share_with_suggestion = all ? static_cast<double>(covered + best_gain) / all : 1.0;
  return c;
}

SetStats statsOf(const LabeledSet& set, const AnchorCoverageOptions& anchors) {
  const CocoDataset& d = *set.data;
  SetStats s;
  s.name = set.name;
  s.file = set.file;
  s.images = static_cast<int64_t>(d.images().size());
  s.instances_per_image = histogram({0, 1, 2, 4, 8, 16, 32, 64, 128, kInf});
  s.sqrt_area = histogram({0, 8, 16, 32, 64, 128, 256, 512, kInf});
  s.aspect = histogram({-kInf, -3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, kInf});
  std::map<int64_t, size_t> class_at;
  for (const CocoCategory& c : d.categories()) {
    class_at[c.id] = s.classes.size();
    s.classes.push_back({c.id, c.name, 0, 0, 0});
  }
  std::map<std::pair<uint32_t, uint32_t>, int64_t> sizes;
  std::vector<ScaledBox> boxes;
  for (uint32_t i = 0; i < d.images().size(); ++i) {
    const CocoImage& image = d.images()[i];
    sizes[{image.width, image.height}] += 1;
    int64_t instances = 0;
    std::set<int64_t> classes_here;
    for (uint32_t k : d.annotationsOfImage(i)) {
      const CocoAnnotation& a = d.annotations()[k];
      ClassCounts& c = s.classes[class_at.at(a.category_id)];
      if (a.iscrowd) {
        ++s.crowds;
        ++c.crowds;
        continue;
      }
      ++instances;
      ++c.instances;
      classes_here.insert(a.category_id);
      const int bucket = sizeBucket(a);
      s.sizes[static_cast<size_t>(bucket)] += 1;
      const double w = a.bbox[2], h = a.bbox[3];
      count(s.sqrt_area, std::sqrt(std::isnan(a.area) ? w * h : a.area));
      if (w > 0 && h > 0) {
        count(s.aspect, std::log2(w / h));
        const double scale = resizeScale(image, anchors);
        boxes.push_back({(a.bbox[0] + w / 2) * scale, (a.bbox[1] + h / 2) * scale, w * scale,
                         h * scale, bucket});
      }
    }
    for (int64_t id : classes_here)
      s.classes[class_at.at(id)].images += 1;
    s.instances += instances;
    s.images_without_instances += instances == 0;
    count(s.instances_per_image, static_cast<double>(instances));
  }
  s.image_sizes.assign(sizes.begin(), sizes.end());
  std::stable_sort(s.image_sizes.begin(), s.image_sizes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (s.image_sizes.size() > 10) s.image_sizes.resize(10);
  int64_t most = 0, fewest = std::numeric_limits<int64_t>::max();
  for (const ClassCounts& c : s.classes) {
    if (c.instances == 0) continue;
    most = std::max(most, c.instances);
    fewest = std::min(fewest, c.instances);
  }
  s.imbalance = most > 0 ? static_cast<double>(most) / static_cast<double>(fewest) : 0.0;
  s.anchors = coverage(boxes, anchors);
  return s;
}

std::string categoryName(const CocoDataset& d, int64_t id) {
  for (const CocoCategory& c : d.categories())
    if (c.id == id) return c.name;
  return {};
}

void categoryProblems(const std::vector<LabeledSet>& sets, int64_t num_classes, bool labels_are_ids,
                      std::vector<Problem>& out) {
  for (size_t i = 1; i < sets.size(); ++i) {
    const CocoDataset& a = *sets[0].data;
    const CocoDataset& b = *sets[i].data;
    std::vector<std::string> details;
    for (const CocoCategory& c : a.categories()) {
      const std::string other = categoryName(b, c.id);
      if (b.label(c.id) == 0)
        details.push_back("id " + std::to_string(c.id) + " (" + c.name + ") only in " +
                          sets[0].name);
      else if (other != c.name)
        details.push_back("id " + std::to_string(c.id) + " is \"" + c.name + "\" in " +
                          sets[0].name + " and \"" + other + "\" in " + sets[i].name);
    }
    for (const CocoCategory& c : b.categories())
      if (a.label(c.id) == 0)
        details.push_back("id " + std::to_string(c.id) + " (" + c.name + ") only in " +
                          sets[i].name);
    if (details.empty()) continue;
    std::string message = sets[0].name + " (" + sets[0].file + ") and " + sets[i].name + " (" +
                          sets[i].file + ") list different categories: ";
    for (size_t k = 0; k < details.size() && k < 8; ++k)
      message += (k ? "; " : "") + details[k];
    if (details.size() > 8) message += "; and " + std::to_string(details.size() - 8) + " more";
    out.push_back({"categories_differ", message +
                                            " (the model's labels would mean different classes "
                                            "in training and evaluation)"});
  }
  for (const LabeledSet& set : sets) {
    const auto categories = set.data->categories();
    if (categories.empty()) continue;
    const int64_t k = static_cast<int64_t>(categories.size());
    const int64_t first = categories.front().id, last = categories.back().id;
    const int64_t contiguous_need = k + 1, ids_need = last + 1;
    if (first == 0) {
      out.push_back({"ids_from_zero",
                     set.file + ": category ids start at 0 (" + categories.front().name +
                         "): with category_labels: category_id, id 0 is the background label "
                         "and that class is never learned; keep category_labels: contiguous "
                         "(num_classes " +
                         std::to_string(contiguous_need) + ") or renumber from 1"});
    }
    if (last - first + 1 != k) {
      out.push_back(
          {"id_gaps", set.file + ": category ids " + std::to_string(first) + ".." +
                          std::to_string(last) + " leave " + std::to_string(last - first + 1 - k) +
                          " gaps among " + std::to_string(k) + " categories: num_classes must be " +
                          std::to_string(contiguous_need) + " with category_labels: contiguous, " +
                          std::to_string(ids_need) + " with category_id"});
    }
    const int64_t need = labels_are_ids ? ids_need : contiguous_need;
    if (num_classes > 0 && num_classes != need) {
      out.push_back(
          {"num_classes_mismatch",
           "the spec's num_classes is " + std::to_string(num_classes) + " but " + set.file + "'s " +
               std::to_string(k) + " categories need " + std::to_string(need) +
               " with category_labels: " + (labels_are_ids ? "category_id" : "contiguous") +
               (num_classes < need ? " (classes beyond it cannot be learned)"
                                   : " (the extra outputs are never trained)")});
    }
    int64_t unknown = 0;
    std::string examples;
    for (const CocoWarning& w : set.data->warnings()) {
      if (w.code != CocoWarningCode::kUnknownCategoryId) continue;
      if (++unknown <= 3) examples += (unknown > 1 ? "; " : "") + w.message;
    }
    if (unknown > 0) {
      out.push_back({"unknown_category_ids",
                     set.file + ": " + std::to_string(unknown) +
                         " annotation(s) name a category id the file does not list, and are "
                         "left out: " +
                         examples});
    }
  }
}

void setProblems(const SetStats& s, bool is_train, std::vector<Problem>& out) {
  std::vector<std::string> unused, rare;
  for (const ClassCounts& c : s.classes) {
    if (c.instances == 0)
      unused.push_back(std::to_string(c.id) + " (" + c.name + ")");
    else if (is_train && c.instances < kRareInstances)
      rare.push_back(c.name + ": " + std::to_string(c.instances));
  }
  const auto list = [](const std::vector<std::string>& items) {
    std::string text;
    for (size_t i = 0; i < items.size() && i < 10; ++i)
      text += (i ? ", " : "") + items[i];
    if (items.size() > 10) text += ", and " + std::to_string(items.size() - 10) + " more";
    return text;
  };
  if (!unused.empty())
    out.push_back({"unused_categories", s.name + " (" + s.file +
                                            "): " + std::to_string(unused.size()) +
                                            (unused.size() == 1 ? " category" : " categories") +
                                            " without an instance: " + list(unused)});
  if (!rare.empty())
    out.push_back({"rare_classes", s.name + ": fewer than " + std::to_string(kRareInstances) +
                                       " instances: " + list(rare)});
}

std::string percent(double share) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * share);
  return b;
}

void writeHistogram(io::JsonWriter& json, const Histogram& h) {
  json.beginObject().key("edges").beginArray();
  for (double e : h.edges) {
    if (std::isinf(e))
      json.value(e > 0 ? "inf" : "-inf");
    else
      json.value(e);
  }
  json.endArray().key("counts").beginArray();
  for (int64_t c : h.counts)
    json.value(c);
  json.endArray().endObject();
}

}  // namespace

double bestAnchorIou(double cx, double cy, double w, double h, const AnchorCoverageOptions& o,
                     const std::vector<std::pair<double, double>>& pairs) {
  double best = 0;
  for (int level = o.min_level; level <= o.max_level; ++level) {
    const double stride = std::ldexp(1.0, level);
    // The nearest anchor centre, stride * (j + 0.5), on each axis.
    const double ax = stride * (std::floor(cx / stride) + 0.5);
    const double ay = stride * (std::floor(cy / stride) + 0.5);
    for (int octave = 0; octave < std::max(1, o.num_scales); ++octave) {
      const double base = o.anchor_scale * stride *
                          std::exp2(static_cast<double>(octave) / std::max(1, o.num_scales));
      for (const auto& [pw, ph] : pairs) {
        const double aw = base * pw, ah = base * ph;
        const double inter = overlap(cx, w, ax, aw) * overlap(cy, h, ay, ah);
        const double uni = w * h + aw * ah - inter;
        if (uni > 0) best = std::max(best, inter / uni);
      }
    }
  }
  return best;
}

DatasetStats datasetStats(const std::vector<LabeledSet>& sets, const AnchorCoverageOptions& anchors,
                          int64_t num_classes, bool labels_are_ids) {
  DatasetStats out;
  for (const LabeledSet& set : sets)
    out.sets.push_back(statsOf(set, anchors));
  categoryProblems(sets, num_classes, labels_are_ids, out.problems);
  for (size_t i = 0; i < out.sets.size(); ++i)
    setProblems(out.sets[i], out.sets[i].name != "val", out.problems);  // rare: training data
  for (const SetStats& s : out.sets) {
    if (s.anchors.share_all < 0.9 && s.anchors.suggested_pair) {
      char pair[64];
      std::snprintf(pair, sizeof pair, "(%.2f, %.2f)", s.anchors.suggested_pair->first,
                    s.anchors.suggested_pair->second);
      out.problems.push_back(
          {"anchor_coverage", s.name + ": the anchors reach the positive IoU on " +
                                  percent(s.anchors.share_all) + " of the boxes (small " +
                                  percent(s.anchors.share[0]) + ", medium " +
                                  percent(s.anchors.share[1]) + ", large " +
                                  percent(s.anchors.share[2]) + "); adding the aspect pair " +
                                  pair + " to maskrcnn_config.aspect_ratios raises it to " +
                                  percent(s.anchors.share_with_suggestion)});
    }
  }
  return out;
}

std::string datasetStatsText(const DatasetStats& stats) {
  std::ostringstream out;
  char line[256];
  for (const SetStats& s : stats.sets) {
    out << s.name << " (" << s.file << "): " << s.images << " images ("
        << s.images_without_instances << " without instances), " << s.instances << " instances, "
        << s.crowds << " crowd regions; sizes small " << s.sizes[0] << ", medium " << s.sizes[1]
        << ", large " << s.sizes[2] << "\n";
    std::snprintf(line, sizeof line, "  %-6s %-24s %10s %8s %8s\n", "id", "class", "instances",
                  "crowds", "images");
    out << line;
    for (const ClassCounts& c : s.classes) {
      std::snprintf(line, sizeof line, "  %-6lld %-24.24s %10lld %8lld %8lld\n",
                    static_cast<long long>(c.id), c.name.c_str(),
                    static_cast<long long>(c.instances), static_cast<long long>(c.crowds),
                    static_cast<long long>(c.images));
      out << line;
    }
    std::snprintf(line, sizeof line,
                  "  class imbalance %.1fx; anchor coverage at IoU >= %.2f: ", s.imbalance,
                  s.anchors.positive_iou);
    out << line << percent(s.anchors.share_all) << " (small " << percent(s.anchors.share[0])
        << ", medium " << percent(s.anchors.share[1]) << ", large " << percent(s.anchors.share[2])
        << ")\n";
  }
  out << (stats.problems.empty() ? "no problems found\n"
                                 : std::to_string(stats.problems.size()) + " problem(s):\n");
  for (const Problem& p : stats.problems)
    out << "  [" << p.code << "] " << p.message << "\n";
  return out.str();
}

std::string datasetStatsJson(const DatasetStats& stats) {
  std::ostringstream out;
  io::JsonWriter json(out);
  json.beginObject().key("sets").beginArray();
  for (const SetStats& s : stats.sets) {
    json.beginObject().key("name").value(s.name).key("file").value(s.file);
    json.key("images").value(s.images).key("instances").value(s.instances);
    json.key("crowds")
        .value(s.crowds)
        .key("images_without_instances")
        .value(s.images_without_instances);
    json.key("classes").beginArray();
    for (const ClassCounts& c : s.classes) {
      json.beginObject().key("id").value(c.id).key("name").value(c.name);
      json.key("instances").value(c.instances).key("crowds").value(c.crowds);
      json.key("images").value(c.images).endObject();
    }
    json.endArray();
    json.key("sizes").beginObject().key("small").value(s.sizes[0]).key("medium").value(s.sizes[1]);
    json.key("large").value(s.sizes[2]).endObject();
    writeHistogram(json.key("instances_per_image"), s.instances_per_image);
    writeHistogram(json.key("sqrt_area"), s.sqrt_area);
    writeHistogram(json.key("log2_aspect"), s.aspect);
    json.key("image_sizes").beginArray();
    for (const auto& [size, n] : s.image_sizes)
      json.beginArray().value(size.first).value(size.second).value(n).endArray();
    json.endArray().key("imbalance").value(s.imbalance);
    const AnchorCoverage& a = s.anchors;
    json.key("anchor_coverage").beginObject().key("boxes").beginArray();
    for (int64_t n : a.boxes)
      json.value(n);
    json.endArray().key("covered").beginArray();
    for (int64_t n : a.covered)
      json.value(n);
    json.endArray().key("share").beginArray();
    for (double v : a.share)
      json.value(v);
    json.endArray().key("share_all").value(a.share_all);
    if (a.suggested_pair) {
      json.key("suggested_pair").beginArray().value(a.suggested_pair->first);
      json.value(a.suggested_pair->second).endArray();
      json.key("share_with_suggestion").value(a.share_with_suggestion);
    }
    json.endObject().endObject();
  }
  json.endArray().key("problems").beginArray();
  for (const Problem& p : stats.problems)
    json.beginObject().key("code").value(p.code).key("message").value(p.message).endObject();
  json.endArray().endObject();
  return out.str() + "\n";
}

DatasetStats datasetStatsOfFiles(const std::vector<std::pair<std::string, std::string>>& files,
                                 const AnchorCoverageOptions& anchors, int64_t num_classes,
                                 bool labels_are_ids) {
  std::vector<CocoDataset> data;
  data.reserve(files.size());
  for (const auto& [name, path] : files)
    data.push_back(loadCoco(path));
  std::vector<LabeledSet> sets;
  for (size_t i = 0; i < files.size(); ++i)
    sets.push_back({files[i].first, files[i].second, &data[i]});
  return datasetStats(sets, anchors, num_classes, labels_are_ids);
}

}  // namespace mrcnn::dataset
