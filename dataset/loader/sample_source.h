// Where the data loader's samples come from: a random-access list of images with their
// annotations. Two sources: a COCO json with its image folder (CocoFolderSource) and the
// shards dataset_convert writes (ShardSource, shard_source.h). Sources are read from several
// worker threads at once: every const member must be thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <opencv2/core/mat.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataset/mask/rle.h"

namespace mrcnn::dataset {

class CocoDataset;

struct SourceAnnotation {
  int64_t id = 0;
  int64_t category_id = 0;
  uint32_t label = 0;  // contiguous 1..K; 0 = unknown category (the loader drops it)
  bool iscrowd = false;
  std::array<double, 4> bbox{};  // x, y, w, h in original image pixels, as in COCO
  double area = 0;
  std::optional<Rle> mask;  // filled by sources that store decoded masks; else see mask()
  uint32_t ref = 0;         // the source's own handle for mask() (CocoFolderSource: the index
                            // into CocoDataset::annotations())
};

struct SourceSample {
  int64_t image_id = 0;
  uint32_t height = 0;  // the size the annotations refer to (the json's)
  uint32_t width = 0;
  std::vector<uint8_t> encoded;  // the image file's bytes (JPEG, PNG...), or
  cv::Mat decoded;               // an already decoded CV_8UC3 BGR image (when `encoded` is empty)
  std::vector<SourceAnnotation> annotations;  // in file order
  std::string origin;                         // for messages: the image's path, or shard and record
};

// A sample that cannot be read. The loader skips it with a warning.
class SampleError : public std::runtime_error {
 public:
  enum class Kind : uint8_t { kMissing, kUnreadable };
  SampleError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Samples, in file order.
  virtual size_t size() const = 0;
  // The image id without reading the sample, for messages about a sample that cannot be
  // read; 0 when the source cannot tell (shards).
  virtual int64_t imageId(size_t index) const = 0;
  // Reads sample `index` (< size()): the image and its annotations, masks possibly left for
  // mask(). Throws SampleError when the image cannot be read.
  virtual SourceSample read(size_t index) const = 0;
  // The annotation's mask at its image's size. The default returns `annotation.mask`
  // (an empty Rle when there is none). Throws std::exception on a mask that cannot be decoded.
  virtual Rle mask(const SourceAnnotation& annotation) const;
  // Category ids by contiguous label: categoryIds()[label - 1].
  virtual std::vector<int64_t> categoryIds() const = 0;
  // The known labels of sample `index`'s annotations, crowds left out when `skip_crowd` (what
  // training keeps; the repeat factors' input). The default reads the sample; a source that
  // can answers without its image.
  virtual std::vector<uint32_t> labels(size_t index, bool skip_crowd) const;
  // Whether mask() gives the instances' masks (shards converted without masks do not).
  virtual bool hasMasks() const { return true; }
};

// A COCO instances json (through loadCoco) and the folder of its images (file_name relative
// to it). Annotations carry no masks: mask() rasterises them with annotationRle, lazily, in
// the loader's worker threads and only for the instances that are kept.
class CocoFolderSource final : public SampleSource {
 public:
  CocoFolderSource(std::shared_ptr<const CocoDataset> dataset, std::filesystem::path image_dir);
  // Loads the json (throws CocoError as loadCoco does).
  CocoFolderSource(const std::filesystem::path& json_file, std::filesystem::path image_dir);

  size_t size() const override;
  int64_t imageId(size_t index) const override;
  SourceSample read(size_t index) const override;
  Rle mask(const SourceAnnotation& annotation) const override;
  std::vector<int64_t> categoryIds() const override;
  std::vector<uint32_t> labels(size_t index, bool skip_crowd) const override;

  const CocoDataset& dataset() const { return *dataset_; }
  std::filesystem::path imagePath(size_t index) const;

 private:
  std::shared_ptr<const CocoDataset> dataset_;
  std::filesystem::path image_dir_;
};

// The repeat factors (repeatFactors, sample_order.h) of a source's samples at `threshold`,
// from labels(); a sample that cannot be read counts as one without annotations.
std::vector<double> repeatFactorsOf(const SampleSource& source, double threshold, bool skip_crowd);

// Reads a whole file into a string. Throws SampleError (kMissing when it does not exist).
std::vector<uint8_t> readFileBytes(const std::filesystem::path& path);

}  // namespace mrcnn::dataset
