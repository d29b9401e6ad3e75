// The per-image transforms of the data loader, as plain functions: the resized size of both
// resize modes, the bilinear resize + ImageNet normalisation of an image into a planar float
// buffer, the resize of an instance mask, and the box transform. Horizontal flips are folded
// into the resizes (the output is written mirrored), so a flipped image costs nothing extra.
#pragma once

#include <array>
#include <cstdint>
#include <opencv2/core/mat.hpp>
#include <span>

namespace mrcnn::dataset {

enum class ResizeMode : uint8_t {
  kFixed,        // TAO: fit into the (height, width) canvas `image_size`, keeping aspect ratio
  kShorterSide,  // torchvision's GeneralizedRCNNTransform: shorter side to min_size, longer
                 // side at most max_size
};

struct ResizeSpec {
  ResizeMode mode = ResizeMode::kFixed;
  int canvas_height = 832, canvas_width = 1344;  // kFixed
  int min_size = 800, max_size = 1333;           // kShorterSide
};

struct ResizedSize {
  int height = 0;
  int width = 0;
  double scale = 0;  // the nominal factor: the canvas ratio, or torchvision's scale_factor
};

// kFixed: scale = min(H/h, W/w); the limiting side becomes exactly the canvas side and the
// other floor(side * scale), computed in integers (TAO truncates a float32 product, which can
// lose a pixel on the limiting side; this cannot).
// kShorterSide: scale = min(min_size / shorter, max_size / longer) in double and
// floor(side * scale) in double, exactly as torch.nn.functional.interpolate(scale_factor=scale,
// recompute_scale_factor=True) computes the output size. Sides are at least 1.
ResizedSize resizedSize(int height, int width, const ResizeSpec& spec);

// Rounds up to a multiple of `multiple` (>= 1).
int roundUp(int value, int multiple);

// ImageNet statistics on [0, 1] RGB.
inline constexpr std::array<float, 3> kImageNetMean{0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImageNetStd{0.229f, 0.224f, 0.225f};

// Resizes a CV_8UC3 image to (out_height, out_width) and writes it normalised, planar RGB,
// row stride `out_stride` floats, plane stride `plane_stride` floats, into `out` (padding
// around it is the caller's). `bgr` says the input's channel order (cv::imdecode gives BGR).
// The arithmetic follows torchvision: each pixel is first normalised in float32 as
// to_tensor + Normalize do ((x / 255 - mean) / std), then interpolated bilinearly with
// half-pixel centres and no antialiasing in float32, as torch's upsample_bilinear2d with
// align_corners=False and a recomputed scale (source = (dst + 0.5) * in / out - 0.5 with a
// single rounding, clamped at 0). `flip` mirrors the output horizontally.
void resizeNormalize(const cv::Mat& image, bool bgr, int out_height, int out_width, bool flip,
                     float* out, size_t out_stride, size_t plane_stride);

// Resizes a CV_8UC1 0/1 (or 0/nonzero) mask to (out_height, out_width) 0/1 bytes at `out`
// (row-major, contiguous), mirrored when `flip`: bilinear with the same half-pixel mapping as
// the image, then foreground where the interpolated value is >= 0.5. Only the neighbourhood
// of the mask's foreground is computed; the rest is zero.
void resizeMask(const cv::Mat& mask, int out_height, int out_width, bool flip, uint8_t* out);

// A COCO box [x, y, w, h] in original pixels to xyxy in resized pixels: scaled per axis by
// the float32 ratios out/in (as torchvision's resize_boxes), clipped to the resized image,
// mirrored when `flip` (x1' = W - x2, x2' = W - x1).
std::array<float, 4> transformBox(const std::array<double, 4>& xywh, int in_height, int in_width,
                                  int out_height, int out_width, bool flip);

}  // namespace mrcnn::dataset
