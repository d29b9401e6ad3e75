#include "engine/inference/overlay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <opencv2/imgproc.hpp>

namespace mrcnn::engine {

cv::Scalar categoryColour(int64_t category_id) {
  // Hue by the golden angle: neighbours in id order land far apart on the colour wheel.
  const double hue = std::fmod(static_cast<double>(category_id) * 137.508, 360.0);
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue / 2.0, 200, 235));
  cv::Mat bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  const cv::Vec3b c = bgr.at<cv::Vec3b>(0, 0);
  return cv::Scalar(c[0], c[1], c[2]);
}

void drawOverlay(cv::Mat& image, const std::vector<OverlayInstance>& instances,
                 double mask_opacity) {
  CV_Assert(image.type() == CV_8UC3);
  std::vector<size_t> order(instances.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return instances[a].score < instances[b].score; });
  // Lines and labels grow with the image, but not past what the object's size allows: a large
  // image of small objects (tiled inference) keeps each object visible under its label.
  const int image_thickness =
      std::max(1, static_cast<int>(std::lround(std::min(image.rows, image.cols) / 320.0)));
  const double image_font_scale = std::max(0.4, std::min(image.rows, image.cols) / 900.0);

  for (size_t k : order) {
    const OverlayInstance& in = instances[k];
    const cv::Scalar colour = categoryColour(in.category_id);
    const double side = std::min(in.x2 - in.x1, in.y2 - in.y1);
    const int thickness = std::clamp(static_cast<int>(std::lround(side / 16.0)), 1, image_thickness);
    const double font_scale = std::min(image_font_scale, std::max(0.35, side / 60.0));
    if (in.mask) {
      // The window, cut to the image; the mask's rows keep their stride.
      const cv::Rect window = in.mask_width > 0
                                  ? cv::Rect(in.mask_x, in.mask_y, in.mask_width, in.mask_height)
                                  : cv::Rect(0, 0, image.cols, image.rows);
      const cv::Rect inside = window & cv::Rect(0, 0, image.cols, image.rows);
      const cv::Mat whole_window(window.height, window.width, CV_8UC1,
                                 const_cast<uint8_t*>(in.mask));
      const cv::Mat mask = whole_window(inside - window.tl());
      cv::Mat region = image(inside);
      const cv::Vec3d c(colour[0], colour[1], colour[2]);
      for (int y = 0; y < region.rows; ++y) {
        const uint8_t* m = mask.ptr<uint8_t>(y);
        cv::Vec3b* p = region.ptr<cv::Vec3b>(y);
        for (int x = 0; x < region.cols; ++x) {
          if (!m[x]) continue;
          for (int ch = 0; ch < 3; ++ch) {
            p[x][ch] =
                cv::saturate_cast<uint8_t>((1.0 - mask_opacity) * p[x][ch] + mask_opacity * c[ch]);
          }
        }
      }
      std::vector<std::vector<cv::Point>> contours;
      cv::findContours(mask.clone(), contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE,
                       inside.tl());
      cv::drawContours(image, contours, -1, colour, thickness, cv::LINE_AA);
    }
    const cv::Point p1(static_cast<int>(std::lround(in.x1)), static_cast<int>(std::lround(in.y1)));
    const cv::Point p2(static_cast<int>(std::lround(in.x2)), static_cast<int>(std::lround(in.y2)));
    cv::rectangle(image, p1, p2, colour, thickness, cv::LINE_AA);

    char score[32];
    if (in.threshold >= 0) {
      std::snprintf(score, sizeof score, " %.2f >=%.2f", static_cast<double>(in.score),
                    static_cast<double>(in.threshold));
    } else {
      std::snprintf(score, sizeof score, " %.2f", static_cast<double>(in.score));
    }
    const std::string label = in.name + score;
    int baseline = 0;
    const cv::Size size =
        cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font_scale, 1, &baseline);
    const int top = std::max(0, p1.y - size.height - baseline - 2);
    cv::rectangle(image, cv::Point(p1.x, top),
                  cv::Point(p1.x + size.width + 2, top + size.height + baseline + 2), colour,
                  cv::FILLED);
    cv::putText(image, label, cv::Point(p1.x + 1, top + size.height + 1), cv::FONT_HERSHEY_SIMPLEX,
                font_scale, cv::Scalar(20, 20, 20), 1, cv::LINE_AA);
  }
}

}  // namespace mrcnn::engine
