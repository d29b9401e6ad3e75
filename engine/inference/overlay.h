// Overlay images: an image with its detections drawn on it (masks tinted in a colour per
// category, box outlines, "name score" labels, ">=t" after when a class threshold is in force), as
// the inference task writes them.
#pragma once

#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

namespace mrcnn::engine {

struct OverlayInstance {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // box, image pixels
  float score = 0;
  int64_t category_id = 0;
  std::string name;
  const uint8_t* mask = nullptr;  // 0/1, row-major, over the mask's window; null: no mask
  // The window the mask covers, in image pixels: its top-left corner and size; a width of 0
  // is the whole image.
  int mask_x = 0, mask_y = 0, mask_width = 0, mask_height = 0;
  float threshold = -1;           // >= 0: the class threshold in force, shown in the label
};

// A colour for a category: distinct hues for consecutive ids (golden-angle steps), BGR.
cv::Scalar categoryColour(int64_t category_id);

// Draws on `image` (CV_8UC3 BGR) in place, lowest score first so the best ends on top.
void drawOverlay(cv::Mat& image, const std::vector<OverlayInstance>& instances,
                 double mask_opacity = 0.45);

}  // namespace mrcnn::engine
