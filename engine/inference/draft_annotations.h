// The model's detections on unlabelled images as a COCO annotation file: a draft a person
// corrects in a labelling tool or the workbench's editor rather than drawing every object.
// Masks become polygons (dataset/mask/mask_polygons.h: vertices can be dragged; an RLE
// cannot), each annotation keeps its `score`, the categories are the model's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/inference/coco_results.h"

namespace mrcnn::engine {

class DraftAnnotations {
 public:
  // `categories`: (id, name) of the model's classes, in label order.
  explicit DraftAnnotations(std::vector<std::pair<int64_t, std::string>> categories)
      : categories_(std::move(categories)) {}

  // An image and the detections kept on it (already thresholded by the caller).
  void add(int64_t image_id, const std::string& file_name, uint32_t width, uint32_t height,
           const std::vector<const CocoInstance*>& kept);

  size_t annotations() const { return annotations_.size(); }
  // The COCO json: images, annotations (polygons, area, bbox, iscrowd 0, score), categories.
  std::string json() const;

 private:
  struct Image {
    int64_t id;
    std::string file_name;
    uint32_t width, height;
  };
  struct Annotation {
    int64_t image_id;
    int64_t category_id;
    std::vector<std::vector<double>> polygons;  // empty: a box-only model's box
    std::array<double, 4> bbox;
    double area;
    double score;
  };
  std::vector<std::pair<int64_t, std::string>> categories_;
  std::vector<Image> images_;
  std::vector<Annotation> annotations_;
};

}  // namespace mrcnn::engine
