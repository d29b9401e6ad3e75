// The exported model's input from a decoded image (BGR, 8 bits): RGB planes in 0..1 as
// float32 [3, H, W], written straight into an OpenVINO tensor. Shared by the OpenVINO backend
// and calibration's probe.
#pragma once

#include <opencv2/core.hpp>
#include <openvino/runtime/tensor.hpp>
#include <vector>

namespace mrcnn::engine {

inline ov::Tensor imageTensor(const cv::Mat& bgr) {
  const int h = bgr.rows, w = bgr.cols;
  ov::Tensor input(ov::element::f32, {3, static_cast<size_t>(h), static_cast<size_t>(w)});
  float* data = input.data<float>();
  std::vector<cv::Mat> planes;
  cv::split(bgr, planes);
  for (int c = 0; c < 3; ++c) {
    cv::Mat plane(h, w, CV_32F, data + static_cast<size_t>(c) * h * w);
    planes[static_cast<size_t>(2 - c)].convertTo(plane, CV_32F, 1.0 / 255.0);
  }
  return input;
}

}  // namespace mrcnn::engine
