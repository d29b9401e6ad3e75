// What the labels' own outlines say about their classes: per class, the median and spread of
// three measures over its annotations (the log of its box's aspect, the share of its box its
// mask fills, the log of its size), and how much more one annotation's outline looks like
// another class's annotations than like its own. A class swapped by mistake keeps the outline
// the annotator drew (a circle's, labelled square); a right label on an object the model
// confuses keeps its own class's. Learned from the annotations being checked: a few wrong
// ones barely move a median.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "eval/coco_eval.h"

namespace mrcnn::review {

class LabelGeometry {
 public:
  // Classes with fewer than `min_annotations` (non-crowd) annotations say nothing; without
  // masks only the box's aspect and size are used.
  LabelGeometry(const std::vector<eval::GroundTruth>& annotations, bool masks,
                size_t min_annotations = 20);

  // 0..1: above 0.5 when `annotation`'s outline is likelier among `other`'s annotations than
  // among its own class's; 0.5 when either class has no usual outline or when the image's
  // border cuts the object (a square's corner at the edge is a triangle's outline). Objects
  // partly hidden by others are judged all the same (tried on the label-check benchmark's
  // development seeds: leaving them out lost more planted class changes than it spared
  // right labels).
  double vote(const eval::GroundTruth& annotation, int64_t other) const;

  // The annotation's box reaches the image's border (known from its mask's size; never
  // without a mask). Such outlines are neither learned nor judged.
  static bool cutByTheBorder(const eval::GroundTruth& g);

 private:
  static constexpr size_t kMeasures = 3;
  struct Usual {
    double median = 0, scale = 0;  // scale 0: the measure is unknown for the class
  };
  std::array<double, kMeasures> measures(const eval::GroundTruth& g) const;

  bool masks_;
  std::map<int64_t, std::array<Usual, kMeasures>> usual_;
};

}  // namespace mrcnn::review
