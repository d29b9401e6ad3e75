// Compares two COCO instances files the way the importers' oracles are judged: the same images
// (by file base name), the same categories by name, and per instance the same class, the box
// within a tolerance and the mask IoU (pycocotools' rasterisation, through dataset/mask/rle.h,
// which equals it bit for bit) at or above a threshold. A mismatch names the image and the
// instance, so a failing test says which object broke.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dataset/coco/coco.h"
#include "dataset/mask/rle.h"

namespace mrcnn::testing {

struct CompareOptions {
  double min_iou = 0.99;
  double box_tolerance = 0.5;  // px, each of x, y, w, h
  bool compare_boxes = true;
  bool compare_masks = true;
  bool same_category_set = true;              // else only the classes of instances must agree
  std::set<std::string> ignored_categories;   // e.g. a reference's "background"
  // datumaro keeps polygon points as float32: both sides' polygons are rounded so before
  // rasterising, or a 5-pixel object differs by a pixel that is only the oracle's rounding.
  bool float32_polygons = false;
};

struct Instance {
  std::string label;
  dataset::Box box{};
  bool has_mask = false;
  dataset::Rle rle;
};

inline std::map<std::string, std::vector<Instance>> instancesByImage(const dataset::CocoDataset& coco,
                                                                     std::set<std::string>* names,
                                                                     bool float32_polygons) {
  std::map<std::string, std::vector<Instance>> out;
  for (const dataset::CocoImage& image : coco.images()) {
    out[std::filesystem::path(std::string(image.file_name)).filename().string()];
  }
  for (const dataset::CocoCategory& c : coco.categories()) names->insert(c.name);
  for (const dataset::CocoAnnotation& a : coco.annotations()) {
    const dataset::CocoImage& image = coco.images()[a.image_index];
    Instance instance;
    instance.label = coco.categories()[a.label - 1].name;
    instance.box = a.bbox;
    instance.has_mask = a.segmentation != dataset::SegmentationKind::kNone;
    if (instance.has_mask && float32_polygons && a.segmentation == dataset::SegmentationKind::kPolygons) {
      std::vector<dataset::Polygon> polygons;
      for (std::span<const double> p : coco.polygons(a)) {
        dataset::Polygon& q = polygons.emplace_back();
        for (const double v : p) q.push_back(static_cast<float>(v));
      }
      instance.rle = dataset::rleFromPolygons(polygons, image.height, image.width);
    } else if (instance.has_mask) {
      instance.rle = dataset::annotationRle(coco, a);
    }
    out[std::filesystem::path(std::string(image.file_name)).filename().string()].push_back(instance);
  }
  return out;
}

inline double maskIou(const dataset::Rle& a, const dataset::Rle& b) {
  const dataset::Rle dt[1] = {a};
  const dataset::Rle gt[1] = {b};
  const uint8_t crowd[1] = {0};
  return dataset::iou(dt, gt, crowd).at(0, 0);
}

inline std::string boxText(const dataset::Box& b) {
  return "[" + std::to_string(b[0]) + ", " + std::to_string(b[1]) + ", " + std::to_string(b[2]) + ", " +
         std::to_string(b[3]) + "]";
}

// Empty when `ours` matches `theirs`; else every difference, one a line. Instances are paired
// within an image and a class by the best mask IoU (box IoU when a side has no mask).
inline std::string compareCoco(const std::filesystem::path& ours_path, const std::filesystem::path& theirs_path,
                               const CompareOptions& options) {
  const dataset::CocoDataset ours_coco = dataset::loadCoco(ours_path);
  const dataset::CocoDataset theirs_coco = dataset::loadCoco(theirs_path);
  std::set<std::string> our_names, their_names;
  auto ours = instancesByImage(ours_coco, &our_names, options.float32_polygons);
  auto theirs = instancesByImage(theirs_coco, &their_names, options.float32_polygons);
  for (const std::string& n : options.ignored_categories) {
    our_names.erase(n);
    their_names.erase(n);
  }
  std::string report;
  auto fail = [&](const std::string& line) { report += line + "\n"; };
  if (options.same_category_set && our_names != their_names) {
    std::string a, b;
    for (const auto& n : our_names) a += n + ",";
    for (const auto& n : their_names) b += n + ",";
    fail("categories differ: ours {" + a + "} theirs {" + b + "}");
  }
  for (const auto& [name, list] : theirs) {
    if (ours.count(name) == 0) fail("image " + name + ": missing from ours");
  }
  for (auto& [name, mine] : ours) {
    auto it = theirs.find(name);
    if (it == theirs.end()) {
      fail("image " + name + ": not in theirs");
      continue;
    }
    std::vector<Instance>& other = it->second;
    std::vector<bool> used(other.size(), false);
    if (mine.size() != other.size()) {
      fail("image " + name + ": " + std::to_string(mine.size()) + " instances, theirs " +
           std::to_string(other.size()));
    }
    for (size_t i = 0; i < mine.size(); ++i) {
      const Instance& m = mine[i];
      double best = -1;
      size_t best_j = other.size();
      for (size_t j = 0; j < other.size(); ++j) {
        if (used[j] || other[j].label != m.label) continue;
        double score = 0;
        if (m.has_mask && other[j].has_mask && options.compare_masks) {
          score = maskIou(m.rle, other[j].rle);
        } else {
          const dataset::Box dt[1] = {m.box};
          const dataset::Box gt[1] = {other[j].box};
          const uint8_t crowd[1] = {0};
          score = dataset::iou(dt, gt, crowd).at(0, 0);
        }
        if (score > best) {
          best = score;
          best_j = j;
        }
      }
      const std::string what = "image " + name + ", our instance " + std::to_string(i) + " (" + m.label +
                               ", box " + boxText(m.box) + ")";
      if (best_j == other.size()) {
        fail(what + ": no instance of that class in theirs");
        continue;
      }
      used[best_j] = true;
      const Instance& t = other[best_j];
      if (options.compare_masks && m.has_mask != t.has_mask) {
        fail(what + ": " + (m.has_mask ? "has a mask, theirs not" : "has no mask, theirs has"));
      } else if (options.compare_masks && m.has_mask && best < options.min_iou) {
        fail(what + ": mask IoU " + std::to_string(best) + " < " + std::to_string(options.min_iou));
      }
      if (options.compare_boxes) {
        for (size_t k = 0; k < 4; ++k) {
          if (std::abs(m.box[k] - t.box[k]) > options.box_tolerance) {
            fail(what + ": box differs from theirs " + boxText(t.box) + " by more than " +
                 std::to_string(options.box_tolerance) + " px");
            break;
          }
        }
      }
    }
  }
  return report;
}

}  // namespace mrcnn::testing
