// The stored sample values of an 8-bit (or less) palette or grayscale PNG: for a palette PNG
// the palette indices themselves. VOC's SegmentationObject and SegmentationClass files keep
// instance and class numbers as palette indices; OpenCV's imread expands a palette to colours
// and loses them, so these files are decoded here with libpng. RGB-saved masks (datumaro's VOC export)
// are read back through VOC's colormap.
#pragma once

#include <filesystem>
#include <opencv2/core/mat.hpp>
#include <string>

namespace mrcnn::dataset::import {

struct PngIndices {
  cv::Mat values;       // CV_8UC1, one index a pixel; empty when not ok
  std::string problem;  // why not: "not a PNG", "16-bit samples", a colour off the colormap...
  bool ok() const { return problem.empty(); }
};

PngIndices readPngIndices(const std::filesystem::path& path);

}  // namespace mrcnn::dataset::import
