// COCO instances json: read with the project's COCO loader (dataset/coco), whose checks and
// warnings hold here too; each file of a folder's annotations/ is a split of its own
// (instances_val2017.json -> "val2017"). Images are looked for where COCO's layouts put them:
// images/<split>/, <split>/, images/, beside the json.
#include <algorithm>
#include <cmath>

#include "dataset/coco/coco.h"
#include "dataset/import/file_util.h"
#include "dataset/import/imported_dataset.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;

bool isSkip(CocoWarningCode code) {
  switch (code) {
    case CocoWarningCode::kBadImage:
    case CocoWarningCode::kDuplicateImageId:
    case CocoWarningCode::kBadCategory:
    case CocoWarningCode::kDuplicateCategoryId:
    case CocoWarningCode::kBadBbox:
    case CocoWarningCode::kUnknownImageId:
    case CocoWarningCode::kUnknownCategoryId:
      return true;
    default:
      return false;
  }
}

std::string splitName(const fs::path& json) {
  std::string stem = json.stem().string();
  if (stem.starts_with("instances_")) stem = stem.substr(10);
  return stem;
}

fs::path imageFolder(const fs::path& json, const std::string& split, const CocoDataset& coco) {
  const fs::path dir = json.parent_path();
  const fs::path root = dir.filename() == "annotations" ? dir.parent_path() : dir;
  const std::vector<fs::path> candidates = {root / "images" / split, root / split, root / "images", dir};
  for (const fs::path& c : candidates) {
    if (coco.images().empty() || fs::exists(c / std::string(coco.images()[0].file_name))) return c;
  }
  return candidates.back();
}

void readOne(const fs::path& json, const std::string& split, const ReadContext& context,
             ImportedDataset* dataset) {
  const std::string file = display(json);
  CocoLoadOptions options;
  options.threads = context.threads;
  CocoDataset coco;
  try {
    coco = loadCoco(json, options);
  } catch (const CocoError& e) {
    throw ImportError(e.file(), e.byteOffset() ? "byte " + std::to_string(*e.byteOffset()) : "",
                      (e.keyPath().empty() ? "" : e.keyPath() + ": ") + e.reason());
  }
  ProblemLog& log = *context.log;
  for (const CocoWarning& w : coco.warnings()) {
    std::string place = "byte " + std::to_string(w.byte_offset);
    if (!w.key_path.empty()) place += " (" + w.key_path + ")";
    if (isSkip(w.code)) {
      log.skip(std::string(warningName(w.code)), file, place, w.message);
    } else {
      log.warn(std::string(warningName(w.code)), file, place, w.message);
    }
  }
  for (const CocoCategory& c : coco.categories()) {
    if (std::find(dataset->declared_labels.begin(), dataset->declared_labels.end(), c.name) ==
        dataset->declared_labels.end()) {
      dataset->declared_labels.push_back(c.name);
    }
  }
  const fs::path folder = imageFolder(json, split, coco);
  const auto first_image = static_cast<uint32_t>(dataset->images.size());
  for (const CocoImage& image : coco.images()) {
    ImportedImage imported;
    imported.path = (folder / std::string(image.file_name)).lexically_normal();
    imported.source = file;
    imported.width = image.width;
    imported.height = image.height;
    imported.split = split;
    dataset->images.push_back(std::move(imported));
  }
  for (const CocoAnnotation& a : coco.annotations()) {
    ImportedInstance instance;
    instance.image = first_image + a.image_index;
    instance.label = coco.categories()[a.label - 1].name;
    instance.iscrowd = a.iscrowd;
    instance.given_bbox = a.bbox;
    if (!std::isnan(a.area)) instance.given_area = a.area;
    instance.file = file;
    instance.place = "annotation id " + std::to_string(a.id);
    if (a.segmentation == SegmentationKind::kPolygons) {
      for (std::span<const double> p : coco.polygons(a)) instance.polygons.emplace_back(p.begin(), p.end());
    } else if (a.segmentation == SegmentationKind::kNone) {
      instance.box = a.bbox;
    } else {
      try {
        instance.mask = annotationRle(coco, a);
      } catch (const std::invalid_argument& e) {
        log.skip("bad_segmentation", file, instance.place, std::string("its RLE does not decode: ") + e.what());
        continue;
      }
    }
    dataset->instances.push_back(std::move(instance));
  }
}

}  // namespace

ImportedDataset readCoco(const ReadContext& context) {
  ImportedDataset dataset;
  if (fs::is_regular_file(context.input)) {
    // A single file: its own split only when the name says one (instances_val2017.json).
    const std::string stem = context.input.stem().string();
    readOne(context.input, stem.starts_with("instances_") ? splitName(context.input) : "", context, &dataset);
    if (!stem.starts_with("instances_")) {
      for (ImportedImage& image : dataset.images) image.split.clear();
    }
    return dataset;
  }
  fs::path dir = context.input / "annotations";
  if (!fs::is_directory(dir)) dir = context.input;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw ImportError(display(context.input), "", "no COCO .json files");
  for (const fs::path& f : files) {
    context.report("reading " + display(f));
    readOne(f, splitName(f), context, &dataset);
  }
  return dataset;
}

}  // namespace mrcnn::dataset::import
