#include "dataset/mask/mask_polygons.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>

namespace mrcnn::dataset {

std::vector<Polygon> polygonsFromMask(const Rle& mask, double min_area) {
  cv::Mat pixels = decodeMask(mask);
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(pixels, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
  std::vector<std::pair<double, Polygon>> regions;
  for (const std::vector<cv::Point>& c : contours) {
    if (c.size() < 3) continue;
    const double area = std::abs(cv::contourArea(c));
    if (area < min_area) continue;
    Polygon xy;
    xy.reserve(c.size() * 2);
    for (const cv::Point& p : c) {
      xy.push_back(p.x);
      xy.push_back(p.y);
    }
    regions.emplace_back(area, std::move(xy));
  }
  std::stable_sort(regions.begin(), regions.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Polygon> out;
  out.reserve(regions.size());
  for (auto& r : regions) out.push_back(std::move(r.second));
  return out;
}

}  // namespace mrcnn::dataset
