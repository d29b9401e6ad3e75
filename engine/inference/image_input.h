// Images from files into the model's input: decoded, resized as the spec says (the same
// arithmetic as the training loader: dataset/loader/transform.h), normalised, and batched
// into a zero-padded tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <filesystem>
#include <opencv2/core/mat.hpp>
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

// A file that could not be used, and why (dataset/image/decode_image.h's problem).
struct SkippedImage {
  std::filesystem::path path;
  std::string problem;
};

struct InputBatch {
  at::Tensor images;  // [N, 3, H, W] float32; undefined when no file could be used
  model::ImageSizes sizes;
  std::vector<InputImage> inputs;
  std::vector<cv::Mat> originals;     // the decoded images (BGR), as inputs: for overlays
  std::vector<SkippedImage> skipped;  // the files left out, in the order given
};

class ImageReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The image files of a folder (jpg, jpeg, png, bmp, tif, tiff, webp; not recursive), sorted
// by name; a single image file gives itself. Throws ImageReadError naming the path when it
// does not exist or holds no image.
std::vector<std::filesystem::path> listImages(const std::filesystem::path& file_or_folder);

// Decodes, resizes and batches the files that can be used; the others (missing, unreadable,
// empty, truncated, not an image, more pixels than the limit) are listed in `skipped` and the
// rest go on: one bad file never costs the others.
InputBatch readImages(const std::vector<std::filesystem::path>& paths, const InputOptions& options);

// The same, as batches of one padded size each, in the order their first image was given
// (`index` in each batch: the position of its images among the readable ones). An image
// padded beyond its own size in a batch of larger ones gets other detections than alone:
// the RPN ranks the anchors of the padding too. Batched this way, an image's detections are
// those it gets alone, whichever files share its batch. Skipped files are in the first batch.
struct SizedBatch {
  InputBatch batch;
  std::vector<size_t> index;
};
std::vector<SizedBatch> readImagesBySize(const std::vector<std::filesystem::path>& paths,
                                         const InputOptions& options);
// Decoded images (BGR, 8 bits) batched the same way (their inputs' paths empty): tiles.
std::vector<SizedBatch> batchDecodedBySize(std::vector<cv::Mat> images,
                                           const InputOptions& options);

}  // namespace mrcnn::engine
