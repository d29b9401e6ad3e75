#include "dataset/loader/shard_source.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>

#include "dataset/convert/shard.h"

namespace mrcnn::dataset {

std::vector<std::filesystem::path> shardFilesMatching(const std::string& pattern) {
  const std::filesystem::path full(pattern);
  const std::filesystem::path folder = full.has_parent_path() ? full.parent_path() : ".";
  const std::string name = full.filename().string();
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string candidate = it->path().filename().string();
    if (fnmatch(name.c_str(), candidate.c_str(), FNM_PERIOD) == 0 && it->is_regular_file(ec))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

ShardSource::ShardSource(const std::vector<std::filesystem::path>& shards) {
  if (shards.empty()) throw ShardError("no shard file given (does the file pattern match?)");
  std::map<uint32_t, std::unique_ptr<ShardReader>> by_index;
  const ShardInfo* first = nullptr;
  std::filesystem::path first_path;
  for (const std::filesystem::path& path : shards) {
    auto reader = std::make_unique<ShardReader>(path);
    const ShardInfo& info = reader->info();
    if (first == nullptr) {
      first_path = path;
    } else if (info.shard_count != first->shard_count || info.categories != first->categories ||
               info.has_masks != first->has_masks) {
      throw ShardError(path.string() + ": does not belong with " + first_path.string() +
                       " (its shard count, categories or masks flag differ)");
    }
    if (by_index.count(info.shard_index) != 0)
      throw ShardError(path.string() + ": shard " + std::to_string(info.shard_index) +
                       " is given twice (" + by_index.at(info.shard_index)->path().string() + ")");
    const uint32_t shard_index = info.shard_index;
    by_index.emplace(shard_index, std::move(reader));
    first = &by_index.begin()->second->info();
    first_path = by_index.begin()->second->path();
  }
  has_masks_ = first->has_masks;
  for (const ShardCategory& category : first->categories)
    category_ids_.push_back(category.id);
  size_t longest = 0;
  for (auto& [shard_index, reader] : by_index) {
    longest = std::max(longest, reader->size());
    readers_.push_back(std::move(reader));
  }
  for (size_t record = 0; record < longest; ++record)
    for (size_t r = 0; r < readers_.size(); ++r)
      if (record < readers_[r]->size())
        index_.emplace_back(static_cast<uint32_t>(r), static_cast<uint32_t>(record));
}

ShardSource::~ShardSource() = default;

SourceSample ShardSource::read(size_t index) const {
  const auto [r, record_index] = index_[index];
  const ShardReader& reader = *readers_[r];
  ShardRecord record;
  try {
    reader.read(record_index, record);
  } catch (const ShardError& e) {
    throw SampleError(SampleError::Kind::kUnreadable, e.what());
  }
  SourceSample sample;
  sample.image_id = record.image_id;
  sample.height = record.height;
  sample.width = record.width;
  sample.origin = reader.path().string() + " record " + std::to_string(record_index) + " (" +
                  record.file_name + ")";
  sample.encoded = std::move(record.image_bytes);
  sample.annotations.reserve(record.annotations.size());
  for (ShardAnnotation& a : record.annotations) {
    SourceAnnotation& out = sample.annotations.emplace_back();
    out.id = a.id;
    out.category_id = a.category_id;
    out.label = a.label;
    out.iscrowd = a.iscrowd;
    out.bbox = a.bbox;
    out.area = a.area;
    if (has_masks_) out.mask = std::move(a.mask);
  }
  return sample;
}

std::vector<int64_t> ShardSource::categoryIds() const {
  return category_ids_;
}

}  // namespace mrcnn::dataset
