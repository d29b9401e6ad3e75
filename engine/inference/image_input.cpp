#include "engine/inference/image_input.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <system_error>

#include "dataset/image/decode_image.h"

namespace mrcnn::engine {
namespace {

bool isImageFile(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* e : {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"}) {
    if (ext == e) return true;
  }
  return false;
}

}  // namespace

std::vector<std::filesystem::path> listImages(const std::filesystem::path& file_or_folder) {
  std::error_code ec;
  if (!std::filesystem::exists(file_or_folder, ec)) {
    throw ImageReadError(file_or_folder.string() + ": no such file or folder");
  }
  if (!std::filesystem::is_directory(file_or_folder, ec)) return {file_or_folder};
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(file_or_folder, ec)) {
    if (entry.is_regular_file() && isImageFile(entry.path())) out.push_back(entry.path());
  }
  if (ec) throw ImageReadError(file_or_folder.string() + ": cannot list: " + ec.message());
  std::sort(out.begin(), out.end());
  if (out.empty()) {
    throw ImageReadError(file_or_folder.string() +
                         ": holds no image (jpg, jpeg, png, bmp, tif, tiff or webp)");
  }
  return out;
}

namespace {

// The padded size of a batch of these inputs.
std::array<int, 2> paddedSize(const std::vector<InputImage>& inputs, const InputOptions& options) {
  int height = 0, width = 0;
  for (const auto& in : inputs) {
    height = std::max(height, in.height);
    width = std::max(width, in.width);
  }
  if (options.pad_to_canvas && options.resize.mode == dataset::ResizeMode::kFixed) {
    height = std::max(height, options.resize.canvas_height);
    width = std::max(width, options.resize.canvas_width);
  }
  return {dataset::roundUp(height, options.pad_multiple),
          dataset::roundUp(width, options.pad_multiple)};
}

// Fills images and sizes of a batch whose inputs and originals are set.
void assemble(InputBatch& batch, const InputOptions& options) {
  if (batch.inputs.empty()) return;
  const auto [height, width] = paddedSize(batch.inputs, options);
  const int64_t n = static_cast<int64_t>(batch.inputs.size());
  batch.images = at::zeros({n, 3, height, width}, at::kFloat);
  batch.sizes.padded = {height, width};
  float* data = batch.images.data_ptr<float>();
  const size_t plane = static_cast<size_t>(height) * static_cast<size_t>(width);
  for (int64_t i = 0; i < n; ++i) {
    const auto& in = batch.inputs[static_cast<size_t>(i)];
    dataset::resizeNormalize(batch.originals[static_cast<size_t>(i)], /*bgr=*/true, in.height,
                             in.width, /*flip=*/false, data + static_cast<size_t>(i) * 3 * plane,
                             static_cast<size_t>(width), plane);
    batch.sizes.images.push_back({in.height, in.width});
  }
}

// Decodes the files: inputs and originals of the readable ones, the others skipped.
InputBatch decodeAll(const std::vector<std::filesystem::path>& paths, const InputOptions& options) {
  TORCH_CHECK(options.pad_multiple >= 1, "readImages: pad_multiple must be at least 1");
  InputBatch batch;
  for (const auto& path : paths) {
    dataset::DecodedImage decoded = dataset::readImageFile(path);
    if (!decoded.ok()) {
      batch.skipped.push_back({path, decoded.problem});
      continue;
    }
    cv::Mat& image = decoded.bgr;
    const dataset::ResizedSize r = dataset::resizedSize(image.rows, image.cols, options.resize);
    batch.inputs.push_back({path, image.rows, image.cols, r.height, r.width});
    batch.originals.push_back(std::move(image));
  }
  return batch;
}

}  // namespace

InputBatch readImages(const std::vector<std::filesystem::path>& paths,
                      const InputOptions& options) {
  InputBatch batch = decodeAll(paths, options);
  assemble(batch, options);
  return batch;
}

namespace {

// The images of `all` in batches of one padded size each.
std::vector<SizedBatch> groupBySize(InputBatch all, const InputOptions& options) {
  std::vector<SizedBatch> out;
  std::map<std::array<int, 2>, size_t> by_size;  // padded size -> position in out
  for (size_t i = 0; i < all.inputs.size(); ++i) {
    const std::array<int, 2> size = paddedSize({all.inputs[i]}, options);
    const auto [it, added] = by_size.emplace(size, out.size());
    if (added) out.emplace_back();
    SizedBatch& group = out[it->second];
    group.batch.inputs.push_back(all.inputs[i]);
    group.batch.originals.push_back(std::move(all.originals[i]));
    group.index.push_back(i);
  }
  for (SizedBatch& group : out)
    assemble(group.batch, options);
  if (out.empty()) out.emplace_back();
  out.front().batch.skipped = std::move(all.skipped);
  return out;
}

}  // namespace

std::vector<SizedBatch> readImagesBySize(const std::vector<std::filesystem::path>& paths,
                                         const InputOptions& options) {
  return groupBySize(decodeAll(paths, options), options);
}

std::vector<SizedBatch> batchDecodedBySize(std::vector<cv::Mat> images,
                                           const InputOptions& options) {
  InputBatch all;
  for (cv::Mat& image : images) {
    const dataset::ResizedSize r = dataset::resizedSize(image.rows, image.cols, options.resize);
    all.inputs.push_back({{}, image.rows, image.cols, r.height, r.width});
    all.originals.push_back(std::move(image));
  }
  return groupBySize(std::move(all), options);
}

}  // namespace mrcnn::engine
