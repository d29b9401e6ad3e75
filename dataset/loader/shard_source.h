// The data loader's source over the shards dataset_convert writes (dataset/convert/shard.h):
// images as their encoded bytes, annotations already decoded with their masks, so a sample
// costs one positioned read and a JPEG decode, no json and no polygon rasterisation.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dataset/loader/sample_source.h"

namespace mrcnn::dataset {

class ShardReader;

// The files a TAO file pattern names ("/data/train-*-of-00256", "/data/*.shard"): wildcards
// (*, ?, [...]) in the file name only, hidden files (dataset_convert's temporaries) left out;
// sorted by name. Empty when the folder is missing or nothing matches.
std::vector<std::filesystem::path> shardFilesMatching(const std::string& pattern);

class ShardSource final : public SampleSource {
 public:
  // Opens every shard (throws ShardError on a damaged file, or on a set that does not belong
  // together: no file, differing shard counts, categories or masks flags, a shard index
  // twice). Sample order: round-robin over the shards by shard index (record 0 of each shard,
  // then record 1...): dataset_convert puts json image i in shard i % N, so this is the json's
  // order when no image was left out at conversion (and close to it otherwise).
  explicit ShardSource(const std::vector<std::filesystem::path>& shards);
  ~ShardSource() override;

  size_t size() const override { return index_.size(); }
  // 0: a shard's index holds offsets only (read() gives the id).
  int64_t imageId(size_t) const override { return 0; }
  // The record; a record that fails its checksum or structure throws SampleError (unreadable).
  SourceSample read(size_t index) const override;
  std::vector<int64_t> categoryIds() const override;
  bool hasMasks() const override { return has_masks_; }

  size_t shardCount() const { return readers_.size(); }

 private:
  std::vector<std::unique_ptr<ShardReader>> readers_;  // by shard index
  std::vector<std::pair<uint32_t, uint32_t>> index_;   // sample -> (reader, record)
  std::vector<int64_t> category_ids_;
  bool has_masks_ = true;
};

}  // namespace mrcnn::dataset
