// VOC 2012 instance segmentation: SegmentationObject/<id>.png holds an instance number a
// pixel and SegmentationClass/<id>.png a class number (both palette indices; 0 background,
// 255 the boundary/ignore band, which belongs to no instance); JPEGImages/<id>.jpg is the
// photo. Class names come from class_names.txt (one a line, index 0 the background),
// labelmap.txt (CVAT's and datumaro's exports), or are VOC's 20. ImageSets/Segmentation/<split>.txt lists decide the splits when present.
#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <set>

#include "dataset/import/file_util.h"
#include "dataset/import/imported_dataset.h"
#include "dataset/import/parallel.h"
#include "dataset/import/png_indices.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;

constexpr uint8_t kIgnore = 255;

const std::vector<std::string>& vocClasses() {
  static const std::vector<std::string> names = {
      "background", "aeroplane", "bicycle", "bird",  "boat",        "bottle", "bus",
      "car",        "cat",       "chair",   "cow",   "diningtable", "dog",    "horse",
      "motorbike",  "person",    "pottedplant", "sheep", "sofa",   "train",  "tvmonitor"};
  return names;
}

std::vector<std::string> readLines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// The photo of an id: JPEGImages/<id>.jpg, or another extension when that is what is there.
fs::path findPhoto(const fs::path& dir, const std::string& id) {
  const fs::path jpg = dir / (id + ".jpg");
  if (fs::exists(jpg)) return jpg;
  for (const char* ext : {".jpeg", ".png", ".JPG", ".bmp"}) {
    const fs::path p = dir / (id + ext);
    if (fs::exists(p)) return p;
  }
  return jpg;  // missing: reported later, as every missing image is
}

struct ItemResult {
  ImportedImage image;
  std::vector<ImportedInstance> instances;
  bool ok = false;
};

ItemResult readItem(const fs::path& root, const fs::path& object_png,
                    const std::vector<std::string>& classes, ProblemLog& log) {
  ItemResult result;
  const std::string id = object_png.stem().string();
  const std::string file = display(object_png);
  const PngIndices objects = readPngIndices(object_png);
  if (!objects.ok()) {
    log.skip("bad_mask_png", file, "", objects.problem + ": image " + id + " skipped");
    return result;
  }
  const fs::path class_png = root / "SegmentationClass" / (id + ".png");
  const PngIndices labels = readPngIndices(class_png);
  if (!labels.ok()) {
    log.skip("bad_mask_png", display(class_png), "",
             labels.problem + ": the classes of image " + id + " are unknown, image skipped");
    return result;
  }
  if (labels.values.size() != objects.values.size()) {
    log.skip("mask_size_mismatch", display(class_png), "",
             "SegmentationClass and SegmentationObject differ in size: image " + id + " skipped");
    return result;
  }
  result.ok = true;
  result.image.path = findPhoto(root / "JPEGImages", id);
  result.image.source = file;
  result.image.width = static_cast<uint32_t>(objects.values.cols);
  result.image.height = static_cast<uint32_t>(objects.values.rows);

  // Per instance number, the votes of the class numbers under it: an instance has one class,
  // but a hand-edited pair of files may disagree on a few pixels.
  std::map<uint8_t, std::array<uint32_t, 256>> votes;
  for (int y = 0; y < objects.values.rows; ++y) {
    const uint8_t* o = objects.values.ptr<uint8_t>(y);
    const uint8_t* c = labels.values.ptr<uint8_t>(y);
    for (int x = 0; x < objects.values.cols; ++x) {
      if (o[x] == 0 || o[x] == kIgnore) continue;
      auto [it, added] = votes.try_emplace(o[x]);
      if (added) it->second.fill(0);
      ++it->second[c[x]];
    }
  }
  for (const auto& [number, counts] : votes) {
    uint32_t best = 0;  // the most voted class number other than background and ignore
    uint32_t best_votes = 0;
    for (uint32_t k = 1; k < kIgnore; ++k) {
      if (counts[k] > best_votes) {
        best = k;
        best_votes = counts[k];
      }
    }
    const std::string place = "instance " + std::to_string(number);
    if (best == 0 || best >= classes.size()) {
      log.skip("unknown_class", file, place,
               best == 0 ? "no class under the instance in SegmentationClass: skipped"
                         : "class number " + std::to_string(best) + " has no name (" +
                               std::to_string(classes.size()) + " classes): skipped");
      continue;
    }
    ImportedInstance instance;
    instance.label = classes[best];
    instance.mask = encodeMask(objects.values == number);
    instance.file = file;
    instance.place = place;
    result.instances.push_back(std::move(instance));
  }
  return result;
}

// ImageSets/Segmentation/<split>.txt: id -> split. trainval.txt is the union of train and
// val in VOC, not a split of its own.
std::map<std::string, std::string> readSplits(const fs::path& root, ProblemLog& log) {
  std::map<std::string, std::string> split_of;
  const fs::path dir = root / "ImageSets" / "Segmentation";
  if (!fs::is_directory(dir)) return split_of;
  std::vector<fs::path> lists;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".txt" && e.path().stem() != "trainval") lists.push_back(e.path());
  }
  std::sort(lists.begin(), lists.end());
  for (const fs::path& list : lists) {
    const std::string split = list.stem().string();
    size_t line_number = 0;
    for (const std::string& id : readLines(list)) {
      ++line_number;
      if (id.empty()) continue;
      const auto [it, added] = split_of.try_emplace(id, split);
      if (!added && it->second != split) {
        log.warn("image_in_two_splits", display(list), "line " + std::to_string(line_number),
                 id + " is in " + it->second + " already: kept there");
      }
    }
  }
  return split_of;
}

}  // namespace

ImportedDataset readVoc(const ReadContext& context) {
  const fs::path root = context.input;
  const fs::path object_dir = root / "SegmentationObject";
  if (!fs::is_directory(object_dir)) {
    throw ImportError(display(root), "", "no SegmentationObject folder: not a VOC instance segmentation data set");
  }
  std::vector<std::string> classes = vocClasses();
  const fs::path names_file = root / "class_names.txt";
  const fs::path labelmap_file = root / "labelmap.txt";
  if (fs::exists(names_file)) {
    classes = readLines(names_file);
    if (classes.empty()) throw ImportError(display(names_file), "", "no class names in the file");
  } else if (fs::exists(labelmap_file)) {
    // CVAT's and datumaro's VOC exports: `name:r,g,b:parts:actions` a line, in index order.
    classes.clear();
    for (const std::string& line : readLines(labelmap_file)) {
      if (line.empty() || line.front() == '#') continue;
      classes.push_back(line.substr(0, line.find(':')));
    }
    if (classes.empty()) throw ImportError(display(labelmap_file), "", "no labels in the file");
  }
  std::vector<fs::path> pngs;
  for (const auto& e : fs::directory_iterator(object_dir)) {
    if (e.path().extension() == ".png") pngs.push_back(e.path());
  }
  std::sort(pngs.begin(), pngs.end());
  const std::map<std::string, std::string> split_of = readSplits(root, *context.log);

  std::vector<ItemResult> items(pngs.size());
  parallelFor(
      pngs.size(), context.threads,
      [&](size_t i) { items[i] = readItem(root, pngs[i], classes, *context.log); },
      [&](size_t done) {
        context.report("read " + std::to_string(done) + " of " + std::to_string(pngs.size()) +
                       " VOC masks");
      });
  // Ids an ImageSets list names without a SegmentationObject file: images without objects.
  std::set<std::string> with_mask;
  for (const fs::path& p : pngs) with_mask.insert(p.stem().string());
  for (const auto& [id, split] : split_of) {
    if (with_mask.count(id) != 0) continue;
    ItemResult item;
    item.ok = true;
    item.image.path = findPhoto(root / "JPEGImages", id);
    item.image.source = display(root / "ImageSets" / "Segmentation" / (split + ".txt"));
    items.push_back(std::move(item));
  }

  ImportedDataset dataset;
  // Index 0 is the background: no category.
  dataset.declared_labels.assign(classes.begin() + 1, classes.end());
  for (ItemResult& item : items) {
    if (!item.ok) continue;
    const std::string id = item.image.path.stem().string();
    if (!split_of.empty()) {
      const auto it = split_of.find(id);
      if (it != split_of.end()) item.image.split = it->second;
    }
    const auto index = static_cast<uint32_t>(dataset.images.size());
    dataset.images.push_back(std::move(item.image));
    for (ImportedInstance& instance : item.instances) {
      instance.image = index;
      dataset.instances.push_back(std::move(instance));
    }
  }
  return dataset;
}

}  // namespace mrcnn::dataset::import
