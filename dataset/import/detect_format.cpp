// detectFormat: what an input looks like, from its shape alone (names of files and folders,
// the first bytes of a json or xml), so that a folder is never read twice.
#include <fstream>

#include "dataset/import/import.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;

std::string head(const fs::path& p, size_t bytes) {
  std::ifstream in(p, std::ios::binary);
  std::string s(bytes, '\0');
  in.read(s.data(), static_cast<std::streamsize>(bytes));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// A json file: COCO when its start names images/annotations/categories, LabelMe when it
// names shapes. LabelMe files start with version, flags, shapes; COCO files with info,
// licenses or images: the first 64 kB decide.
std::optional<std::string> jsonKind(const fs::path& p) {
  const std::string s = head(p, 1 << 16);
  if (s.find("\"shapes\"") != std::string::npos) return "labelme";
  if (s.find("\"images\"") != std::string::npos || s.find("\"annotations\"") != std::string::npos ||
      s.find("\"categories\"") != std::string::npos)
    return "coco";
  return std::nullopt;
}

bool isCvatXml(const fs::path& p) { return head(p, 4096).find("<annotations") != std::string::npos; }

}  // namespace

std::optional<std::string> detectFormat(const fs::path& input) {
  std::error_code ec;
  if (fs::is_regular_file(input, ec)) {
    const std::string ext = input.extension().string();
    if (ext == ".json") return jsonKind(input);
    if (ext == ".xml" && isCvatXml(input)) return "cvat";
    if (ext == ".yaml" || ext == ".yml") return "yolo";
    return std::nullopt;
  }
  if (!fs::is_directory(input, ec)) return std::nullopt;
  if (fs::is_directory(input / "SegmentationObject")) return "voc";
  if (fs::exists(input / "data.yaml")) return "yolo";
  if (fs::exists(input / "annotations.xml") && isCvatXml(input / "annotations.xml")) return "cvat";
  if (fs::is_directory(input / "annotations")) {
    for (const auto& e : fs::directory_iterator(input / "annotations", ec)) {
      if (e.path().extension() == ".json" && jsonKind(e.path()) == "coco") return "coco";
    }
  }
  std::optional<std::string> found;
  for (const auto& e : fs::directory_iterator(input, ec)) {
    const fs::path& p = e.path();
    if (p.extension() == ".xml" && isCvatXml(p)) return "cvat";
    if ((p.extension() == ".yaml" || p.extension() == ".yml")) found = "yolo";
    if (p.extension() == ".json" && !found) found = jsonKind(p);
  }
  if (found) return found;
  // LabelMe folders are often split into subfolders: the first .json a few levels down decides.
  size_t looked = 0;
  for (auto it = fs::recursive_directory_iterator(input, ec); it != fs::recursive_directory_iterator() && looked < 10000;
       it.increment(ec), ++looked) {
    if (ec) break;
    if (it->path().extension() == ".json") return jsonKind(it->path());
  }
  return std::nullopt;
}

}  // namespace mrcnn::dataset::import
