#include "engine/inference/image_input.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cctype>
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

InputBatch readImages(const std::vector<std::filesystem::path>& paths,
                      const InputOptions& options) {
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
  if (batch.inputs.empty()) return batch;
  int height = 0, width = 0;
  for (const auto& in : batch.inputs) {
    height = std::max(height, in.height);
    width = std::max(width, in.width);
  }
  if (options.pad_to_canvas && options.resize.mode == dataset::ResizeMode::kFixed) {
    height = std::max(height, options.resize.canvas_height);
    width = std::max(width, options.resize.canvas_width);
  }
  height = dataset::roundUp(height, options.pad_multiple);
  width = dataset::roundUp(width, options.pad_multiple);

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
  return batch;
}

}  // namespace mrcnn::engine
