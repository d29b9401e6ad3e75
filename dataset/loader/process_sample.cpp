#include "dataset/loader/process_sample.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <new>
#include <opencv2/core/mat.hpp>
#include <optional>
#include <string>
#include <utility>

#include "dataset/image/decode_image.h"
#include "dataset/loader/sample_order.h"

namespace mrcnn::dataset {
namespace {

// Appends the window of `mask`'s (height x width) foreground to `t`'s crops.
void appendCrop(const uint8_t* mask, int height, int width, Targets& t) {
  int x_lo = width, x_hi = -1, y_lo = height, y_hi = -1;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = mask + static_cast<size_t>(y) * static_cast<size_t>(width);
    for (int x = 0; x < width; ++x) {
      if (row[x] == 0) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  if (x_hi < 0) {
    t.mask_windows.insert(t.mask_windows.end(), {0, 0, 0, 0});
    return;
  }
  const int cw = x_hi - x_lo + 1, ch = y_hi - y_lo + 1;
  t.mask_windows.insert(t.mask_windows.end(), {x_lo, y_lo, cw, ch});
  for (int y = y_lo; y <= y_hi; ++y) {
    const uint8_t* row = mask + static_cast<size_t>(y) * static_cast<size_t>(width) + x_lo;
    t.masks.insert(t.masks.end(), row, row + cw);
  }
}

}  // namespace

size_t Targets::maskOffset(size_t i) const {
  size_t offset = 0;
  for (size_t j = 0; j < i; ++j)
    offset += static_cast<size_t>(mask_windows[4 * j + 2]) * static_cast<size_t>(mask_windows[4 * j + 3]);
  return offset;
}

std::vector<uint8_t> Targets::fullMask(size_t i, int height, int width) const {
  std::vector<uint8_t> out(static_cast<size_t>(height) * static_cast<size_t>(width), 0);
  const int32_t* win = mask_windows.data() + 4 * i;
  const uint8_t* crop = masks.data() + maskOffset(i);
  for (int y = 0; y < win[3]; ++y)
    std::copy_n(crop + static_cast<size_t>(y) * static_cast<size_t>(win[2]), win[2],
                out.begin() + static_cast<ptrdiff_t>((win[1] + y) * width + win[0]));
  return out;
}

SampleImage readSampleImage(const SampleSource& source, size_t index) {
  SampleImage out;
  auto problem = [&](LoaderWarningCode code, std::string message) {
    out.problem.emplace(code, std::move(message));
    return std::move(out);
  };
  SourceSample& sample = out.sample;
  try {
    out.image_id = source.imageId(index);
    sample = source.read(index);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const SampleError& e) {
    return problem(e.kind() == SampleError::Kind::kMissing ? LoaderWarningCode::kMissingImage
                                                           : LoaderWarningCode::kUnreadableImage,
                   e.what());
  } catch (const std::exception& e) {
    return problem(LoaderWarningCode::kUnreadableImage, e.what());
  }
  out.image_id = sample.image_id;
  if (!sample.encoded.empty()) {
    // COCO's annotations are in the stored pixel grid: EXIF orientation is not applied.
    DecodedImage decoded = decodeImage(sample.encoded);
    sample.encoded.clear();
    sample.encoded.shrink_to_fit();
    if (!decoded.ok()) {
      return problem(LoaderWarningCode::kCorruptImage, sample.origin + ": " + decoded.problem);
    }
    out.image = std::move(decoded.bgr);
  } else {
    out.image = sample.decoded;
  }
  const cv::Mat& image = out.image;
  if (image.empty() || image.type() != CV_8UC3)
    return problem(LoaderWarningCode::kCorruptImage, sample.origin + ": cannot be decoded as an image");
  if (sample.height != 0 && (image.rows != static_cast<int>(sample.height) ||
                             image.cols != static_cast<int>(sample.width))) {
    return problem(LoaderWarningCode::kSizeMismatch,
                   sample.origin + ": the image is " + std::to_string(image.cols) + "x" +
                       std::to_string(image.rows) + ", the annotations say " +
                       std::to_string(sample.width) + "x" + std::to_string(sample.height));
  }
  return out;
}

SampleResult processSample(const SampleSource& source, const LoaderOptions& options,
                           const ResizeSpec& resize, uint64_t epoch, uint64_t position,
                           uint32_t index) {
  SampleResult result;
  int64_t image_id = 0;
  auto warn = [&](LoaderWarningCode code, std::string message,
                  std::optional<int64_t> annotation_id = std::nullopt) {
    result.warnings.push_back({.code = code,
                               .image_id = image_id,
                               .annotation_id = annotation_id,
                               .message = std::move(message),
                               .epoch = epoch,
                               .position = position});
  };
  SampleImage read = readSampleImage(source, index);
  image_id = read.image_id;
  if (read.problem) {
    warn(read.problem->first, std::move(read.problem->second));
    return result;
  }
  SourceSample& sample = read.sample;
  cv::Mat& image = read.image;

  // With repeats an image comes several times an epoch: each visit flips on its own.
  const uint32_t flip_key = options.repeat_factors.empty() ? index : static_cast<uint32_t>(position);
  const bool flip =
      options.training && options.augment_input_data && flipDecision(options.seed, epoch, flip_key);
  const ResizedSize size = resizedSize(image.rows, image.cols, resize);
  const auto h = static_cast<size_t>(size.height);
  const auto w = static_cast<size_t>(size.width);
  result.pixels.resize(3 * h * w);
  resizeNormalize(image, /*bgr=*/true, size.height, size.width, flip, result.pixels.data(), w,
                  h * w);
  result.meta = {.image_id = image_id,
                 .source_index = index,
                 .original_height = image.rows,
                 .original_width = image.cols,
                 .height = size.height,
                 .width = size.width,
                 .scale = size.scale,
                 .flipped = flip};
  image.release();

  // Instances: crowd skipping, unknown labels, empty boxes, then the cap.
  struct Kept {
    const SourceAnnotation* annotation;
    std::array<float, 4> box;
  };
  std::vector<Kept> kept;
  const size_t cap = options.training && options.max_num_instances > 0
                         ? options.max_num_instances
                         : std::numeric_limits<size_t>::max();
  for (const SourceAnnotation& a : sample.annotations) {
    if (kept.size() >= cap) break;
    if (options.training && options.skip_crowd_during_training && a.iscrowd) continue;
    if (a.label == 0) {
      warn(LoaderWarningCode::kUnknownCategory,
           "category id " + std::to_string(a.category_id) + " has no label", a.id);
      continue;
    }
    const auto box = transformBox(a.bbox, result.meta.original_height, result.meta.original_width,
                                  size.height, size.width, flip);
    if (box[2] - box[0] < 1.0f || box[3] - box[1] < 1.0f) continue;
    kept.push_back({&a, box});
  }

  Targets& t = result.targets;
  t.boxes.reserve(4 * kept.size());
  std::vector<uint8_t> whole;  // one instance's mask at the image's size, then cropped
  if (options.load_masks) whole.resize(h * w);
  for (const Kept& k : kept) {
    if (options.load_masks) {
      try {
        const cv::Mat mask = decodeMask(source.mask(*k.annotation));
        resizeMask(mask, size.height, size.width, flip, whole.data());
        appendCrop(whole.data(), size.height, size.width, t);
      } catch (const std::bad_alloc&) {
        throw;
      } catch (const std::exception& e) {
        warn(LoaderWarningCode::kBadMask, std::string("mask cannot be decoded: ") + e.what(),
             k.annotation->id);
        continue;
      }
    }
    t.boxes.insert(t.boxes.end(), k.box.begin(), k.box.end());
    t.labels.push_back(k.annotation->label);
    t.iscrowd.push_back(k.annotation->iscrowd ? 1 : 0);
    t.annotation_ids.push_back(k.annotation->id);
  }
  result.ok = true;
  return result;
}

}  // namespace mrcnn::dataset
