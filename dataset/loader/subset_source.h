// Some of a source's samples, in the source's order: the training set without its images that
// hold no annotation training would use (data_config.filter_empty_gt).
#pragma once

#include <memory>
#include <vector>

#include "dataset/loader/sample_source.h"

namespace mrcnn::dataset {

class SubsetSource final : public SampleSource {
 public:
  // `indices`: samples of `source`, each < source->size().
  SubsetSource(std::shared_ptr<const SampleSource> source, std::vector<uint32_t> indices);

  size_t size() const override { return indices_.size(); }
  int64_t imageId(size_t index) const override { return source_->imageId(indices_[index]); }
  SourceSample read(size_t index) const override { return source_->read(indices_[index]); }
  Rle mask(const SourceAnnotation& annotation) const override { return source_->mask(annotation); }
  std::vector<int64_t> categoryIds() const override { return source_->categoryIds(); }
  std::vector<uint32_t> labels(size_t index, bool skip_crowd) const override {
    return source_->labels(indices_[index], skip_crowd);
  }
  bool hasMasks() const override { return source_->hasMasks(); }

  // The source's index of sample `index`.
  uint32_t sourceIndex(size_t index) const { return indices_[index]; }

 private:
  std::shared_ptr<const SampleSource> source_;
  std::vector<uint32_t> indices_;
};

// The samples of `source` that hold at least one annotation of a known category (crowds left
// out when `skip_crowd`, as training leaves them). A sample that cannot be read is kept: the
// loader skips it with its warning.
std::vector<uint32_t> samplesWithAnnotations(const SampleSource& source, bool skip_crowd);

}  // namespace mrcnn::dataset
