#include "engine/train/run_dir.h"

#include <stdexcept>
#include <string>
#include <system_error>

#include "engine/train/checkpoint.h"

namespace mrcnn::train {

std::filesystem::path RunDir::evalFile(uint64_t step) const {
  return evalDir() / ("step-" + std::to_string(step) + ".json");
}

std::filesystem::path RunDir::overlayFile(uint64_t step, int64_t image_id) const {
  return evalDir() / "overlays" / ("step-" + std::to_string(step)) /
         ("image-" + std::to_string(image_id) + ".png");
}

void RunDir::create() const {
  for (const auto& dir : {root_, checkpointsDir(), evalDir()}) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      throw std::runtime_error("cannot create the folder " + dir.string() + ": " + ec.message());
  }
}

bool RunDir::hasCheckpoint() const {
  const std::filesystem::path dir = checkpointsDir();
  std::error_code ec;
  if (std::filesystem::exists(dir / "last", ec)) return true;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (checkpointStepOf(it->path().filename().string())) return true;
  }
  return false;
}

}  // namespace mrcnn::train
