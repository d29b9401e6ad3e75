// The loader's per-sample stage: one sample read from its source, decoded, checked against
// the json's size, resized, normalised and flipped, with its targets built (loader.h says
// what they hold). Worker threads run it side by side, one sample each; loader.cpp puts the
// results back in stream order and into batches. It depends only on the sample and the
// options, never on the other samples or the threads, which is what keeps the stream a
// function of the seed and the position.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/loader/loader.h"
#include "dataset/loader/sample_source.h"
#include "dataset/loader/transform.h"

namespace mrcnn::dataset {

// One sample as a worker leaves it for the assembler.
struct SampleResult {
  bool ok = false;
  ImageMeta meta;
  std::vector<float> pixels;  // [3, meta.height, meta.width]
  Targets targets;
  std::vector<LoaderWarning> warnings;
  std::exception_ptr fatal;  // an unexpected failure: ends the stream with this error
};

// Sample `index` read and decoded (BGR, 8 bits) and checked against the json's size; or the
// problem that skips it (missing, unreadable, corrupt, a size that does not match), the
// warning's code and message naming the file. Only unexpected failures (out of memory) escape.
struct SampleImage {
  int64_t image_id = 0;
  SourceSample sample;
  cv::Mat image;
  std::optional<std::pair<LoaderWarningCode, std::string>> problem;
};
SampleImage readSampleImage(const SampleSource& source, size_t index);

// Reads, decodes and transforms sample `index` of `source`, met at (epoch, position) of the
// stream: the epoch decides its flip (flipDecision), both go into its warnings. Bad data
// gives warnings and ok = false (a skipped image) or fewer instances; only unexpected
// failures (out of memory, a bug) escape. `resize` is the options' resize, built once.
SampleResult processSample(const SampleSource& source, const LoaderOptions& options,
                           const ResizeSpec& resize, uint64_t epoch, uint64_t position,
                           uint32_t index);

}  // namespace mrcnn::dataset
