#include "engine/inference/tiled_backend.h"

#include <opencv2/core.hpp>
#include <sstream>


namespace mrcnn::engine {
namespace {

// Tiles run by the inner backend at once: their masks at tile size are the memory held.
constexpr size_t kTilesAtOnce = 8;

class TiledBackend final : public InferenceBackend {
 public:
  TiledBackend(std::unique_ptr<InferenceBackend> inner, const TileOptions& options)
      : inner_(std::move(inner)), options_(options) {
    checkTileOptions(options_);
  }

  std::string description() const override {
    std::ostringstream s;
    s << inner_->description() << ", tiled: " << options_.size << " px, overlap "
      << options_.overlap << (options_.full_image ? ", with the whole image" : "") << ", "
      << (options_.merge == TileMerge::kNmm ? "nmm" : "nms") << " merge";
    return s.str();
  }
  std::string precision() const override { return inner_->precision(); }

  std::vector<model::ImageDetections> detect(const std::vector<cv::Mat>& images) override {
    std::vector<model::ImageDetections> out;
    for (const cv::Mat& image : images)
      out.push_back(detectOne(image));
    return out;
  }

  BackendRun run(const std::vector<std::filesystem::path>& paths) override {
    return runFileByFile(paths, [this](const cv::Mat& image) { return detectOne(image); });
  }

 private:
  model::ImageDetections detectOne(const cv::Mat& image) {
    const int h = image.rows, w = image.cols;
    if (h <= options_.size && w <= options_.size) return inner_->detect({image}).front();
    const std::vector<Tile> grid = tileGrid(h, w, options_);
    std::vector<TileDetections> tiles;
    for (size_t first = 0; first < grid.size(); first += kTilesAtOnce) {
      const size_t last = std::min(grid.size(), first + kTilesAtOnce);
      std::vector<cv::Mat> crops;
      for (size_t i = first; i < last; ++i) {
        const Tile& t = grid[i];
        crops.push_back(image(cv::Rect(t.x, t.y, t.width, t.height)).clone());
      }
      std::vector<model::ImageDetections> found = inner_->detect(crops);
      for (size_t i = first; i < last; ++i)
        tiles.push_back({grid[i], std::move(found[i - first])});
    }
    if (options_.full_image) tiles.push_back({{0, 0, w, h}, inner_->detect({image}).front()});
    return mergeTiles(tiles, h, w, options_);
  }

  std::unique_ptr<InferenceBackend> inner_;
  TileOptions options_;
};

}  // namespace

std::unique_ptr<InferenceBackend> makeTiledBackend(std::unique_ptr<InferenceBackend> inner,
                                                   const TileOptions& options) {
  return std::make_unique<TiledBackend>(std::move(inner), options);
}

}  // namespace mrcnn::engine
