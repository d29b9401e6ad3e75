// The data loader for training and evaluation: worker threads read, decode, resize, normalise
// and flip images and build their targets ahead of the model, in a bounded prefetch queue;
// batches come out as one contiguous float32 buffer [B, 3, H, W] (planar RGB, normalised,
// padded bottom/right with 0) plus per-image targets, ready for torch::from_blob. No Torch
// here: the engine wraps the buffers.
//
// The stream is a function of the options, the seed and (epoch, position) alone, never of
// thread timing:
//  - training: each epoch visits the samples in trainingOrder(seed, epoch) (sample_order.h);
//    flips are flipDecision(seed, epoch, sample index); epochs follow each other without end
//    when `repeat`. Evaluation: file order (the first eval_samples), no flips, one pass.
//  - a batch takes the next batch_size samples of its epoch that can be read; an unreadable
//    one (missing, corrupt, size differing from the json) is skipped with a warning and the
//    batch filled with the next. Batches never span two epochs; a short last batch is dropped
//    when drop_last.
//  - with shard_count > 1 (data-parallel ranks, visit_plan.h) a training batch is the rank's
//    slice of the global batch, less its unreadable samples (it may be short, even empty).
//  - Batch::position (and position()) is where the stream goes on: Loader(source, options,
//    epoch, position) continues a stopped run with exactly the batches it would have seen.
//
// Targets, per image (training and evaluation alike, unless said):
//  - boxes float [N, 4] xyxy in resized-image pixels: COCO's xywh scaled per axis, clipped to
//    the image, mirrored when flipped; instances whose box is then under 1 pixel wide or
//    high are dropped (degenerate boxes break the box regression's log(w));
//  - labels int64 [N] (1..K, contiguous); instances with no label (unknown category) dropped;
//  - iscrowd; crowd instances left out in training when skip_crowd_during_training;
//  - at most max_num_instances in training (0 = no cap): the first ones in file order after
//    the drops above;
//  - masks uint8 [N, h, w] 0/1 at the resized image's size (not padded), when load_masks:
//    resized bilinearly with the image's half-pixel mapping and thresholded at 0.5, so a mask
//    stays aligned with its image to the sub-pixel (torchvision's legacy nearest mode shifts
//    masks by up to half a source pixel) and its edges stay smooth when upscaling.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/loader/sample_source.h"
#include "dataset/loader/transform.h"

namespace mrcnn::dataset {

// The data_config fields of the spec (experiment.proto) the loader uses, with the spec's
// defaults, plus the batch shape and the seed; the engine maps the spec onto it (no
// dependency on the spec library here).
struct LoaderOptions {
  bool training = true;  // shuffle, flips, crowd skipping and the instance cap; false: eval
  uint32_t batch_size = 2;
  uint64_t seed = 0;

  ResizeMode resize_mode = ResizeMode::kFixed;  // data_config.resize_mode
  int image_height = 832;                       // data_config.image_size (fixed mode)
  int image_width = 1344;
  uint32_t min_size = 800;          // shorter_side mode
  uint32_t max_size = 1333;         // shorter_side mode
  uint32_t size_divisibility = 32;  // shorter_side mode: batch padded to a multiple of it
  uint32_t max_level = 6;           // maskrcnn_config.max_level: fixed mode pads the canvas
                                    // to a multiple of 2^max_level
  bool augment_input_data = true;   // training: horizontal flips
  bool skip_crowd_during_training = true;
  uint32_t max_num_instances = 200;  // training; 0 = all
  uint32_t eval_samples = 500;       // evaluation: the first N images; 0 = all

  uint32_t n_workers = 2;               // threads that decode and transform; 0 = in next()
  uint32_t prefetch_buffer_size = 4;    // batches ready ahead of the consumer (at least 1)
  uint32_t shuffle_buffer_size = 4096;  // 0 or >= the dataset: full shuffle; else a window
                                        // (tf.data's semantics, see trainingOrder)
  // Training: each sample's repeat factor (repeatFactors, sample_order.h), one a sample of the
  // source; the epoch is then repeatedOrder's (always fully shuffled), and a visit's flip is
  // keyed by its position so that an image's repeats are flipped independently. Empty: each
  // sample once an epoch.
  std::vector<double> repeat_factors;

  bool load_masks = true;  // instance masks in the targets
  bool drop_last = true;   // training: drop an epoch's short last batch (eval never drops)
  bool repeat = true;      // training: go on with the next epoch instead of ending

  // Data-parallel ranks (visit_plan.h): this loader delivers rank shard_index's share of each
  // global batch of batch_size x shard_count samples (training; Batch::position is then the
  // global position), or every shard_count-th image (evaluation).
  uint32_t shard_count = 1;
  uint32_t shard_index = 0;
};

enum class LoaderWarningCode : uint8_t {
  kMissingImage,     // the image file does not exist
  kUnreadableImage,  // it exists but cannot be read
  kCorruptImage,     // it does not decode, or is truncated
  kSizeMismatch,     // its decoded size differs from the json's: annotations would not fit
  kBadMask,          // an annotation's mask cannot be decoded: the instance is dropped
  kUnknownCategory,  // an annotation without a contiguous label: dropped
};

// snake_case, as events print it ("corrupt_image").
std::string_view loaderWarningName(LoaderWarningCode code);

struct LoaderWarning {
  LoaderWarningCode code{};
  int64_t image_id = 0;
  std::optional<int64_t> annotation_id;
  std::string message;  // names the file (or shard record) and the reason
  uint64_t epoch = 0;
  uint64_t position = 0;  // the sample's position in its epoch's order
};

struct ImageMeta {
  int64_t image_id = 0;
  uint32_t source_index = 0;  // index in the SampleSource
  int original_height = 0;    // the decoded image
  int original_width = 0;
  int height = 0;  // resized, before padding: the valid region of the batch buffer
  int width = 0;
  double scale = 0;  // nominal resize factor (ResizedSize::scale)
  bool flipped = false;
};

struct Targets {
  std::vector<float> boxes;      // [N, 4] xyxy
  std::vector<int64_t> labels;   // [N]
  std::vector<uint8_t> iscrowd;  // [N]
  // Each instance's mask cropped to the window that holds its pixels, back to back (row-major
  // width x height bytes each); empty without load_masks. An image with many small objects
  // then costs what they cover, not the image's size times their number.
  std::vector<uint8_t> masks;
  std::vector<int32_t> mask_windows;    // [N, 4]: x0, y0, width, height (0 x 0: no pixel)
  std::vector<int64_t> annotation_ids;  // [N]
  size_t size() const { return labels.size(); }
  // Where instance i's crop starts in `masks`.
  size_t maskOffset(size_t i) const;
  // Instance i's mask at the image's size (height x width of its ImageMeta).
  std::vector<uint8_t> fullMask(size_t i, int height, int width) const;
};

struct Batch {
  uint64_t epoch = 0;
  uint64_t position = 0;  // the epoch position after this batch: where the stream resumes
  int height = 0;         // padded
  int width = 0;
  std::vector<float> images;  // [size(), 3, height, width]
  std::vector<ImageMeta> meta;
  std::vector<Targets> targets;
  std::vector<LoaderWarning> warnings;  // skipped samples and dropped instances met while
                                        // filling this batch
  size_t size() const { return meta.size(); }
  const float* image(size_t i) const {
    return images.data() + i * 3 * static_cast<size_t>(height) * static_cast<size_t>(width);
  }
};

struct LoaderStats {
  double wait_seconds = 0;       // total time next() waited for a batch
  double last_wait_seconds = 0;  // in the last next()
  uint64_t batches = 0;
  uint64_t images = 0;
  uint64_t skipped_images = 0;
  uint64_t warnings = 0;
};

// Bad options, or an epoch that yields no batch at all (every image unreadable): the message
// says which and how many.
class LoaderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Loader {
 public:
  // Starts the workers at (epoch, position). Throws LoaderError on bad options.
  Loader(std::shared_ptr<const SampleSource> source, LoaderOptions options, uint64_t epoch = 0,
         uint64_t position = 0);
  ~Loader();  // stops and joins the threads, whatever the consumer left unread
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch; std::nullopt once a single pass (evaluation, or training without repeat)
  // is over. Throws LoaderError when an epoch yields no batch, and rethrows any unexpected
  // error of a worker (the loader then stays failed until reset()).
  std::optional<Batch> next();
  // Restarts the stream at (epoch, position); a position at or past the epoch's end starts
  // the next epoch (in a single pass: ends it).
  void reset(uint64_t epoch, uint64_t position = 0);

  // Where the next batch starts.
  uint64_t epoch() const;
  uint64_t position() const;
  size_t epochSize() const;  // samples visited per epoch
  const LoaderOptions& options() const;

  LoaderStats stats() const;
  // The warnings of the batches delivered so far (the first 10000; stats().warnings counts
  // all), and those not yet taken by takeWarnings() (for the engine's events).
  std::vector<LoaderWarning> warnings() const;
  std::vector<LoaderWarning> takeWarnings();

 private:
  class Pipeline;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace mrcnn::dataset
