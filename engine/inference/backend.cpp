#include "engine/inference/backend.h"

#include "dataset/image/decode_image.h"

namespace mrcnn::engine {

BackendRun runFileByFile(const std::vector<std::filesystem::path>& paths,
                         const std::function<model::ImageDetections(const cv::Mat&)>& detect) {
  BackendRun out;
  for (const std::filesystem::path& path : paths) {
    dataset::DecodedImage decoded = dataset::readImageFile(path);
    if (!decoded.ok()) {
      out.skipped.push_back({path, decoded.problem});
      continue;
    }
    BackendImage& image = out.images.emplace_back();
    image.original = std::move(decoded.bgr);
    image.input = {path, image.original.rows, image.original.cols, 0, 0};
    image.detections = detect(image.original);
  }
  return out;
}

}  // namespace mrcnn::engine
