// The stored sample values of a palette or grayscale PNG, one byte a pixel: for a palette PNG
// the palette indices themselves. VOC's SegmentationObject and SegmentationClass files keep
// instance and class numbers as palette indices; OpenCV's imread expands a palette to colours
// and loses them, so these files are decoded here with libpng. RGB-saved masks (datumaro's VOC export)
// are read back through VOC's colormap.
#pragma once

#include <filesystem>
#include <opencv2/core/mat.hpp>
#include <span>
#include <string>

namespace mrcnn::dataset::import {

struct PngIndices {
  cv::Mat values;       // CV_8UC1, one index a pixel; empty when not ok
  std::string problem;  // why not: "not a PNG", "16-bit samples", a colour off the colormap...
  bool ok() const { return problem.empty(); }
};

// A VOC mask file: an 8-bit (or less) palette or grayscale PNG, or RGB in VOC's colormap.
PngIndices readPngIndices(const std::filesystem::path& path);

// A PNG in memory (LabelMe's `mask` shapes, saved by PIL from a boolean array as 1-bit
// grayscale): palette indices, grey levels (16-bit ones by their high byte; alpha dropped),
// and for RGB the largest of a pixel's three samples, so that a pixel is zero exactly when it
// is black. No OpenCV decoder: the importer links none.
PngIndices decodePngSamples(std::span<const uint8_t> bytes);

}  // namespace mrcnn::dataset::import
