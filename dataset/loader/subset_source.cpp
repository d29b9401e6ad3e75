#include "dataset/loader/subset_source.h"

#include <stdexcept>
#include <string>

namespace mrcnn::dataset {

SubsetSource::SubsetSource(std::shared_ptr<const SampleSource> source, std::vector<uint32_t> indices)
    : source_(std::move(source)), indices_(std::move(indices)) {
  if (!source_) throw std::invalid_argument("SubsetSource: no source");
  for (uint32_t i : indices_)
    if (i >= source_->size())
      throw std::out_of_range("SubsetSource: sample " + std::to_string(i) + " of a source of " +
                              std::to_string(source_->size()));
}

std::vector<uint32_t> samplesWithAnnotations(const SampleSource& source, bool skip_crowd) {
  std::vector<uint32_t> kept;
  for (size_t i = 0; i < source.size(); ++i) {
    try {
      if (source.labels(i, skip_crowd).empty()) continue;
    } catch (const SampleError&) {
    }
    kept.push_back(static_cast<uint32_t>(i));
  }
  return kept;
}

}  // namespace mrcnn::dataset
