#include "engine/setup/data_setup.h"

#include <ATen/ATen.h>
#include <glob.h>

#include <algorithm>
#include <stdexcept>

#include "dataset/loader/shard_source.h"

namespace mrcnn::engine {

dataset::LoaderOptions loaderOptionsFromSpec(const spec::LoadedSpec& loaded, bool training) {
  const spec::Experiment& s = loaded.spec;
  const auto& d = s.data_config();
  dataset::LoaderOptions o;
  o.training = training;
  o.batch_size = training ? s.train_batch_size() : std::max<uint32_t>(1, s.eval_batch_size());
  o.seed = s.seed();
  o.resize_mode = d.resize_mode() == "shorter_side" ? dataset::ResizeMode::kShorterSide
                                                    : dataset::ResizeMode::kFixed;
  o.image_height = loaded.resolved.image_height;
  o.image_width = loaded.resolved.image_width;
  o.min_size = d.min_size();
  o.max_size = d.max_size();
  o.size_divisibility = d.size_divisibility();
  o.max_level = s.maskrcnn_config().max_level();
  o.augment_input_data = d.augment_input_data();
  o.skip_crowd_during_training = d.skip_crowd_during_training();
  o.max_num_instances = d.max_num_instances();
  o.eval_samples = d.eval_samples();
  o.n_workers = d.n_workers();
  o.prefetch_buffer_size = std::max<uint32_t>(1, d.prefetch_buffer_size());
  o.shuffle_buffer_size = d.shuffle_buffer_size();
  o.load_masks = s.maskrcnn_config().include_mask();
  o.drop_last = true;
  o.repeat = training;
  return o;
}

namespace {

std::vector<std::filesystem::path> globFiles(const std::string& pattern) {
  glob_t g{};
  std::vector<std::filesystem::path> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  return out;
}

}  // namespace

std::shared_ptr<const dataset::SampleSource> sampleSource(const spec::LoadedSpec& loaded,
                                                          const DataFiles& data, bool training) {
  const auto& d = loaded.spec.data_config();
  const std::filesystem::path json = training ? data.train_json : data.val_json;
  if (!json.empty()) {
    const std::filesystem::path images = training ? data.train_image_dir : data.val_image_dir;
    return std::make_shared<dataset::CocoFolderSource>(json, images);
  }
  const std::string pattern = training ? d.training_file_pattern() : d.validation_file_pattern();
  if (pattern.empty()) {
    throw std::runtime_error(std::string("data_config: no ") +
                             (training ? "training" : "validation") +
                             " data: give train_json_file and train_image_dir, "
                             "training_file_pattern, or shapes_dataset");
  }
  std::filesystem::path full(pattern);
  if (full.is_relative()) full = loaded.resolved.spec_dir / full;
  const auto shards = globFiles(full.string());
  if (shards.empty()) {
    throw std::runtime_error(std::string("data_config.") +
                             (training ? "training_file_pattern" : "validation_file_pattern") +
                             ": no file matches " + full.string());
  }
  return std::make_shared<dataset::ShardSource>(shards);
}

at::Tensor batchImages(const dataset::Batch& batch) {
  return at::from_blob(const_cast<float*>(batch.images.data()),
                       {static_cast<int64_t>(batch.size()), 3, batch.height, batch.width},
                       at::TensorOptions().dtype(at::kFloat));
}

model::ImageSizes batchSizes(const dataset::Batch& batch) {
  model::ImageSizes sizes;
  sizes.padded = {batch.height, batch.width};
  for (const auto& m : batch.meta)
    sizes.images.push_back({m.height, m.width});
  return sizes;
}

model::MaskRCNNTargets batchTargets(const dataset::Batch& batch, bool with_masks) {
  model::MaskRCNNTargets t;
  for (size_t i = 0; i < batch.size(); ++i) {
    const dataset::Targets& g = batch.targets[i];
    const auto n = static_cast<int64_t>(g.size());
    t.boxes.push_back(
        at::from_blob(const_cast<float*>(g.boxes.data()), {n, 4}, at::kFloat).clone());
    t.labels.push_back(
        at::from_blob(const_cast<int64_t*>(g.labels.data()), {n}, at::kLong).clone());
    if (with_masks) t.mask_crops.push_back(croppedMasks(g, batch.meta[i].height, batch.meta[i].width));
  }
  return t;
}

model::CroppedMasks croppedMasks(const dataset::Targets& targets, int64_t height, int64_t width) {
  const auto n = static_cast<int64_t>(targets.size());
  model::CroppedMasks m;
  m.height = height;
  m.width = width;
  m.windows = at::zeros({n, 4}, at::kLong);
  m.offsets = at::zeros({n}, at::kLong);
  // Without the loader's masks (none loaded) every window stays empty: no pixel.
  if (targets.mask_windows.size() == static_cast<size_t>(4 * n)) {
    int64_t* win = m.windows.mutable_data_ptr<int64_t>();
    int64_t* off = m.offsets.mutable_data_ptr<int64_t>();
    int64_t at_byte = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < 4; ++k) win[4 * i + k] = targets.mask_windows[static_cast<size_t>(4 * i + k)];
      off[i] = at_byte;
      at_byte += win[4 * i + 2] * win[4 * i + 3];
    }
  }
  m.data = at::from_blob(const_cast<uint8_t*>(targets.masks.data()),
                         {static_cast<int64_t>(targets.masks.size())}, at::kByte)
               .clone();
  return m;
}

}  // namespace mrcnn::engine
