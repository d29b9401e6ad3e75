#include "engine/inference/backend.h"

#include "dataset/image/decode_image.h"

namespace mrcnn::engine {

bool decodeInto(BackendRun& out, const std::filesystem::path& path) {
  dataset::DecodedImage decoded = dataset::readImageFile(path);
  if (!decoded.ok()) {
    out.skipped.push_back({path, decoded.problem});
    return false;
  }
  BackendImage& image = out.images.emplace_back();
  image.original = std::move(decoded.bgr);
  image.input = {path, image.original.rows, image.original.cols, 0, 0};
  return true;
}

BackendRun runFileByFile(const std::vector<std::filesystem::path>& paths,
                         const std::function<model::ImageDetections(const cv::Mat&)>& detect) {
  BackendRun out;
  for (const std::filesystem::path& path : paths) {
    if (decodeInto(out, path)) out.images.back().detections = detect(out.images.back().original);
  }
  return out;
}

}  // namespace mrcnn::engine
