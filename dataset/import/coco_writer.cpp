#include "dataset/import/coco_writer.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "dataset/import/parallel.h"
#include "io/json_writer.h"

namespace mrcnn::dataset::import {

namespace {

CocoGeometry computed(const ImportedInstance& instance, uint32_t width, uint32_t height) {
  CocoGeometry g;
  if (instance.mask) {
    Rle rle = *instance.mask;
    if (!instance.polygons.empty()) {
      const Rle both[2] = {rle, rleFromPolygons(instance.polygons, height, width)};
      rle = merge(both);
    }
    g.area = static_cast<double>(area(rle));
    g.bbox = toBbox(rle);
    g.rle = std::move(rle);
    return g;
  }
  if (!instance.polygons.empty()) {
    g.area = static_cast<double>(area(rleFromPolygons(instance.polygons, height, width)));
    double x0 = std::numeric_limits<double>::max(), y0 = x0;
    double x1 = std::numeric_limits<double>::lowest(), y1 = x1;
    for (const Polygon& p : instance.polygons) {
      for (size_t k = 0; k + 1 < p.size(); k += 2) {
        x0 = std::min(x0, p[k]);
        x1 = std::max(x1, p[k]);
        y0 = std::min(y0, p[k + 1]);
        y1 = std::max(y1, p[k + 1]);
      }
    }
    g.bbox = {x0, y0, x1 - x0, y1 - y0};
    return g;
  }
  if (instance.box) {
    g.bbox = *instance.box;
    g.area = g.bbox[2] * g.bbox[3];
  }
  return g;
}

}  // namespace

CocoGeometry cocoGeometry(const ImportedInstance& instance, uint32_t width, uint32_t height) {
  CocoGeometry g = computed(instance, width, height);
  // A COCO file's own box and area stay (the mask still decides whether anything is left).
  if (instance.given_bbox) g.bbox = *instance.given_bbox;
  if (instance.given_area && g.area > 0) g.area = *instance.given_area;
  return g;
}

namespace {

void writeAttributes(io::JsonWriter& w, const std::vector<Attribute>& attributes) {
  w.key("attributes").beginObject();
  for (const Attribute& a : attributes) {
    w.key(a.name);
    switch (a.kind) {
      case Attribute::Kind::kBool:
        w.value(a.text == "true");
        break;
      case Attribute::Kind::kNumber:
        w.value(std::stod(a.text));
        break;
      case Attribute::Kind::kString:
        w.value(a.text);
        break;
    }
  }
  w.endObject();
}

// One annotation object.
void writeAnnotation(io::JsonWriter& w, int64_t id, const ImportedInstance& instance,
                     const CocoGeometry& g, const std::vector<int64_t>& image_id,
                     const std::map<std::string, int64_t>& category_ids) {
  w.beginObject();
  w.key("id").value(id);
  w.key("image_id").value(image_id[instance.image]);
  w.key("category_id").value(category_ids.at(instance.label));
  if (g.rle) {
    w.key("segmentation").beginObject();
    w.key("size").beginArray().value(g.rle->h).value(g.rle->w).endArray();
    w.key("counts").value(toCompressedString(*g.rle));
    w.endObject();
  } else if (!instance.polygons.empty()) {
    w.key("segmentation").beginArray();
    for (const Polygon& p : instance.polygons) {
      w.beginArray();
      for (const double v : p) w.value(v);
      w.endArray();
    }
    w.endArray();
  }
  w.key("area").value(g.area);
  w.key("bbox").beginArray();
  for (const double v : g.bbox) w.value(v);
  w.endArray();
  w.key("iscrowd").value(instance.iscrowd ? 1 : 0);
  if (!instance.attributes.empty()) writeAttributes(w, instance.attributes);
  w.endObject();
}

}  // namespace

void writeCocoSplit(const std::filesystem::path& path, const ImportedDataset& dataset,
                    const CocoSplitOutput& split, const std::vector<std::string>& categories,
                    const std::map<std::string, int64_t>& category_ids,
                    const std::vector<CocoGeometry>& geometry, unsigned threads) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path.string() + ": cannot create the file");
  std::vector<char> buffer(1 << 20);
  out.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  io::JsonWriter w(out);
  w.beginObject();
  w.key("info").beginObject().key("description").value("written by mrcnn-workbench dataset_import").endObject();
  w.key("licenses").beginArray().endArray();
  // Image ids from 1 in output order; the dataset's index -> id.
  std::vector<int64_t> image_id(dataset.images.size(), 0);
  w.key("images").beginArray();
  for (size_t k = 0; k < split.images.size(); ++k) {
    const ImportedImage& image = dataset.images[split.images[k]];
    image_id[split.images[k]] = static_cast<int64_t>(k + 1);
    w.beginObject()
        .key("id").value(static_cast<int64_t>(k + 1))
        .key("file_name").value(split.file_names[k])
        .key("width").value(image.width)
        .key("height").value(image.height)
        .endObject();
  }
  w.endArray();
  // The annotations, numbered from 1 in output order, formatted in chunks on the threads.
  constexpr size_t kChunk = 2048;
  const size_t chunks = (split.instances.size() + kChunk - 1) / kChunk;
  std::vector<std::string> text(chunks);
  parallelFor(chunks, threads, [&](size_t c) {
    std::ostringstream chunk;
    io::JsonWriter a(chunk);
    a.beginArray();
    const size_t end = std::min(split.instances.size(), (c + 1) * kChunk);
    for (size_t n = c * kChunk; n < end; ++n) {
      writeAnnotation(a, static_cast<int64_t>(n + 1), dataset.instances[split.instances[n]],
                      geometry[split.instances[n]], image_id, category_ids);
    }
    a.endArray();
    text[c] = chunk.str();
  });
  // Each chunk's annotations as one raw piece of the array, without the chunk's brackets.
  w.key("annotations").beginArray();
  for (size_t c = 0; c < chunks; ++c) {
    w.raw(std::string_view(text[c]).substr(1, text[c].size() - 2));
    std::string().swap(text[c]);
  }
  w.endArray();
  w.key("categories").beginArray();
  for (size_t k = 0; k < categories.size(); ++k) {
    w.beginObject()
        .key("id").value(static_cast<int64_t>(k + 1))
        .key("name").value(categories[k])
        .key("supercategory").value("")
        .endObject();
  }
  w.endArray();
  w.endObject();
  out.flush();
  if (!out) throw std::runtime_error(path.string() + ": write failed (disk full?)");
}

}  // namespace mrcnn::dataset::import
