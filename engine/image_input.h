// Images from files into the model's input: decoded, resized as the spec says (the same
// arithmetic as the training loader: dataset/loader/transform.h), normalised, and batched
// into a zero-padded tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataset/loader/transform.h"
#include "engine/model/rpn.h"  // ImageSizes

namespace mrcnn::engine {

struct InputOptions {
  dataset::ResizeSpec resize;
  int pad_multiple = 32;  // the padded batch's sides are multiples of this
  // Fixed mode: the batch is the whole canvas (rounded up to pad_multiple), as in training.
  bool pad_to_canvas = true;
};

struct InputImage {
  std::filesystem::path path;
  int original_height = 0;
  int original_width = 0;
  int height = 0;  // resized, before padding
  int width = 0;
};

struct InputBatch {
  at::Tensor images;  // [N, 3, H, W] float32
  model::ImageSizes sizes;
  std::vector<InputImage> inputs;
};

class ImageReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The image files of a folder (jpg, jpeg, png, bmp, tif, tiff, webp; not recursive), sorted
// by name; a single image file gives itself. Throws ImageReadError naming the path when it
// does not exist or holds no image.
std::vector<std::filesystem::path> listImages(const std::filesystem::path& file_or_folder);

// Decodes, resizes and batches. Throws ImageReadError naming the file when one cannot be read
// or decoded.
InputBatch readImages(const std::vector<std::filesystem::path>& paths, const InputOptions& options);

}  // namespace mrcnn::engine
