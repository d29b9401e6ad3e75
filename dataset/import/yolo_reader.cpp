// Ultralytics YOLO segmentation: data.yaml names the classes (`names`, a list or an index
// map) and the splits (`train`, `val`, `test`: a folder of images, a .txt list of image
// paths, or a list of either; relative to `path`, else to the yaml's folder). An image's
// labels are in the file whose path replaces the last /images/ by /labels/ and the extension
// by .txt; each line is `class x1 y1 x2 y2 ...` in coordinates normalised by the image size. A
// 5-value line is a box (`class cx cy w h`) and stays a box without a mask, with a warning.
#include <algorithm>
#include <fstream>
#include <set>

#include "dataset/image/image_check.h"
#include "dataset/import/file_util.h"
#include "dataset/import/imported_dataset.h"
#include "dataset/import/parallel.h"
#include "dataset/import/yaml_lite.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;

bool isImageFile(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::set<std::string> kExtensions = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"};
  return kExtensions.count(ext) != 0;
}

// The images one entry of a split names: a folder (searched recursively), a .txt list, or a
// single image.
void collectImages(const fs::path& entry, const std::string& yaml_file, std::vector<fs::path>* out) {
  if (fs::is_directory(entry)) {
    std::vector<fs::path> found;
    for (const auto& e : fs::recursive_directory_iterator(entry)) {
      if (e.is_regular_file() && isImageFile(e.path())) found.push_back(e.path());
    }
    std::sort(found.begin(), found.end());
    out->insert(out->end(), found.begin(), found.end());
  } else if (entry.extension() == ".txt" && fs::is_regular_file(entry)) {
    std::ifstream in(entry);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (line.empty()) continue;
      const fs::path p(line);
      out->push_back(p.is_absolute() ? p : (entry.parent_path() / p).lexically_normal());
    }
  } else if (isImageFile(entry)) {
    out->push_back(entry);
  } else {
    throw ImportError(yaml_file, "", "split entry " + display(entry) +
                                         " is not a folder, a .txt list or an image; check the path");
  }
}

fs::path labelPathOf(const fs::path& image) {
  const std::string s = image.string();
  const size_t at = s.rfind("/images/");
  fs::path label = at == std::string::npos ? image : fs::path(s.substr(0, at) + "/labels/" + s.substr(at + 8));
  return label.replace_extension(".txt");
}

struct ItemResult {
  ImportedImage image;
  std::vector<ImportedInstance> instances;
  bool ok = false;
};

ItemResult readItem(const fs::path& image_path, const std::string& split,
                    const std::vector<std::string>& names, ProblemLog& log) {
  ItemResult result;
  result.image.path = image_path;
  result.image.split = split;
  const fs::path label_path = labelPathOf(image_path);
  result.image.source = display(label_path);
  std::ifstream header_in(image_path, std::ios::binary);
  if (!header_in) {
    // Missing images are counted by the common step; its size is unknown, so nothing else
    // can be read.
    result.ok = true;
    return result;
  }
  const std::string bytes{std::istreambuf_iterator<char>(header_in), std::istreambuf_iterator<char>()};
  const auto header = readImageHeader(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!header) {
    log.skip("image_unreadable", display(image_path), "", "not a JPEG or PNG whose size can be read: skipped");
    return result;
  }
  result.ok = true;
  result.image.width = header->width;
  result.image.height = header->height;
  std::ifstream in(label_path);
  if (!in) return result;  // no label file: an image without objects, as Ultralytics reads it
  const std::string file = display(label_path);
  const double w = header->width, h = header->height;
  size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const std::string place = "line " + std::to_string(line_number);
    std::vector<std::string_view> fields;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      const size_t b = i;
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      if (i > b) fields.emplace_back(line.data() + b, i - b);
    }
    if (fields.empty()) continue;
    const auto cls = parseInt(fields[0]);
    if (!cls) {
      throw ImportError(file, place, "the class \"" + std::string(fields[0]) + "\" is not an integer");
    }
    if (*cls < 0 || static_cast<size_t>(*cls) >= names.size()) {
      throw ImportError(file, place,
                        "class index " + std::to_string(*cls) + " is not in data.yaml's names (" +
                            std::to_string(names.size()) + " classes: 0.." +
                            std::to_string(static_cast<int64_t>(names.size()) - 1) + ")");
    }
    std::vector<double> v;
    for (size_t k = 1; k < fields.size(); ++k) {
      const auto d = parseDouble(fields[k]);
      if (!d) {
        v.clear();
        break;
      }
      v.push_back(*d);
    }
    if (v.size() + 1 != fields.size() || v.size() < 4 || (v.size() != 4 && v.size() % 2 != 0)) {
      log.skip("bad_line", file, place, "not `class x1 y1 x2 y2 ...` nor `class cx cy w h`: skipped");
      continue;
    }
    ImportedInstance instance;
    instance.label = names[static_cast<size_t>(*cls)];
    instance.file = file;
    instance.place = place;
    if (v.size() == 4) {
      instance.box = Box{(v[0] - v[2] / 2) * w, (v[1] - v[3] / 2) * h, v[2] * w, v[3] * h};
      log.warn("box_without_mask", file, place, "a box line (5 values): an instance without a mask");
    } else {
      Polygon xy(v.size());
      for (size_t k = 0; k < v.size(); k += 2) {
        xy[k] = v[k] * w;
        xy[k + 1] = v[k + 1] * h;
      }
      instance.polygons.push_back(std::move(xy));
    }
    result.instances.push_back(std::move(instance));
  }
  return result;
}

}  // namespace

ImportedDataset readYolo(const ReadContext& context) {
  fs::path yaml_path = context.input;
  if (fs::is_directory(yaml_path)) {
    yaml_path = context.input / "data.yaml";
    if (!fs::exists(yaml_path)) {
      for (const auto& e : fs::directory_iterator(context.input)) {
        if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") yaml_path = e.path();
      }
    }
  }
  const std::string yaml_file = display(yaml_path);
  const YamlLite yaml = parseYamlLite(readFileOrThrow(yaml_path), yaml_file);
  const YamlValue* names_value = yaml.find("names");
  if (names_value == nullptr) throw ImportError(yaml_file, "", "no `names`: the class names are unknown");
  std::vector<std::string> names;
  if (!names_value->map.empty()) {
    // {index: name}: indexes must be 0..n-1 (Ultralytics' own requirement).
    for (size_t i = 0; i < names_value->map.size(); ++i) {
      const auto it = std::find_if(names_value->map.begin(), names_value->map.end(),
                                   [&](const auto& kv) { return parseInt(kv.first) == static_cast<int64_t>(i); });
      if (it == names_value->map.end()) {
        throw ImportError(yaml_file, "names", "class indexes are not 0.." + std::to_string(names_value->map.size() - 1));
      }
      names.push_back(it->second);
    }
  } else {
    names = names_value->list;
  }
  if (names.empty()) throw ImportError(yaml_file, "names", "no class names");

  fs::path base = yaml_path.parent_path();
  if (const YamlValue* p = yaml.find("path"); p != nullptr && !p->scalar.empty()) {
    base = fs::path(p->scalar).is_absolute() ? fs::path(p->scalar) : base / p->scalar;
  }
  std::vector<std::pair<fs::path, std::string>> items;  // image, split
  for (const char* split : {"train", "val", "test"}) {
    const YamlValue* v = yaml.find(split);
    if (v == nullptr) continue;
    std::vector<std::string> entries = v->list;
    if (!v->scalar.empty()) entries.push_back(v->scalar);
    std::vector<fs::path> images;
    for (const std::string& entry : entries) {
      const fs::path p = fs::path(entry).is_absolute() ? fs::path(entry) : (base / entry).lexically_normal();
      collectImages(p, yaml_file, &images);
    }
    for (fs::path& image : images) items.emplace_back(std::move(image), split);
  }
  if (items.empty()) throw ImportError(yaml_file, "", "no images: train/val/test name none");

  std::vector<ItemResult> results(items.size());
  parallelFor(
      items.size(), context.threads,
      [&](size_t i) { results[i] = readItem(items[i].first, items[i].second, names, *context.log); },
      [&](size_t done) {
        context.report("read " + std::to_string(done) + " of " + std::to_string(items.size()) + " YOLO images");
      });
  ImportedDataset dataset;
  dataset.declared_labels = names;
  for (ItemResult& r : results) {
    if (!r.ok) continue;
    const auto index = static_cast<uint32_t>(dataset.images.size());
    dataset.images.push_back(std::move(r.image));
    for (ImportedInstance& instance : r.instances) {
      instance.image = index;
      dataset.instances.push_back(std::move(instance));
    }
  }
  return dataset;
}

}  // namespace mrcnn::dataset::import
