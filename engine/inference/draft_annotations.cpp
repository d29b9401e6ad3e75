#include "engine/inference/draft_annotations.h"

#include <sstream>

#include "dataset/mask/mask_polygons.h"
#include "io/json_writer.h"

namespace mrcnn::engine {

void DraftAnnotations::add(int64_t image_id, const std::string& file_name, uint32_t width,
                           uint32_t height, const std::vector<const CocoInstance*>& kept) {
  images_.push_back({image_id, file_name, width, height});
  for (const CocoInstance* ci : kept) {
    Annotation a{image_id, ci->category_id, {}, ci->bbox, ci->bbox[2] * ci->bbox[3], ci->score};
    if (ci->mask) {
      a.polygons = dataset::polygonsFromMask(*ci->mask);
      if (a.polygons.empty()) continue;  // nothing a person could edit: a speck
      a.area = static_cast<double>(dataset::area(*ci->mask));
      a.bbox = dataset::toBbox(*ci->mask);
    }
    annotations_.push_back(std::move(a));
  }
}

std::string DraftAnnotations::json() const {
  std::ostringstream out;
  io::JsonWriter w(out);
  w.beginObject();
  w.key("info").beginObject().key("description").value(
      "model-assisted draft written by mrcnn-workbench inference: check every annotation");
  w.endObject();
  w.key("images").beginArray();
  for (const Image& im : images_) {
    w.beginObject().key("id").value(im.id).key("file_name").value(im.file_name);
    w.key("width").value(im.width).key("height").value(im.height).endObject();
  }
  w.endArray();
  w.key("annotations").beginArray();
  int64_t id = 1;
  for (const Annotation& a : annotations_) {
    w.beginObject().key("id").value(id++).key("image_id").value(a.image_id);
    w.key("category_id").value(a.category_id);
    w.key("segmentation").beginArray();
    if (a.polygons.empty()) {  // a box-only model: the box as a polygon
      const auto& b = a.bbox;
      w.beginArray().value(b[0]).value(b[1]).value(b[0] + b[2]).value(b[1]);
      w.value(b[0] + b[2]).value(b[1] + b[3]).value(b[0]).value(b[1] + b[3]).endArray();
    }
    for (const auto& p : a.polygons) {
      w.beginArray();
      for (const double v : p) w.value(v);
      w.endArray();
    }
    w.endArray();
    w.key("area").value(a.area).key("bbox").beginArray();
    for (const double v : a.bbox) w.value(v);
    w.endArray();
    w.key("iscrowd").value(0).key("score").value(a.score).endObject();
  }
  w.endArray();
  w.key("categories").beginArray();
  for (const auto& [cid, name] : categories_)
    w.beginObject().key("id").value(cid).key("name").value(name).endObject();
  w.endArray();
  w.endObject();
  out << '\n';
  return out.str();
}

}  // namespace mrcnn::engine
