// CVAT for images 1.1 XML, a task export (one <task> in <meta>) or a project export (its
// <image>s carry a `subset`, which becomes the split). polygon, box and mask (CVAT's own RLE
// over the box left/top/width/height, row by row, starting with a run of background) become
// instances; polyline, points, tag and other kinds are skipped with their place. occluded,
// z_order and the <attribute>s are kept in the annotation's attributes, typed by the label's
// declaration in <meta> (checkbox: bool, number: number, the rest: string).
#include <tinyxml2.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dataset/import/file_util.h"
#include "dataset/import/imported_dataset.h"

namespace mrcnn::dataset::import {
namespace {

namespace fs = std::filesystem;
using tinyxml2::XMLElement;

std::string lineOf(const XMLElement* e) { return "line " + std::to_string(e->GetLineNum()); }

const char* attr(const XMLElement* e, const char* name) {
  const char* v = e->Attribute(name);
  return v != nullptr ? v : "";
}

// "x0,y0;x1,y1;..." into x0 y0 x1 y1 ...; nullopt when a number does not parse.
std::optional<Polygon> parsePoints(std::string_view text) {
  Polygon xy;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string_view pair = text.substr(start, end - start);
    const size_t comma = pair.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    const auto x = parseDouble(pair.substr(0, comma));
    const auto y = parseDouble(pair.substr(comma + 1));
    if (!x || !y) return std::nullopt;
    xy.push_back(*x);
    xy.push_back(*y);
    start = end + 1;
  }
  return xy;
}

// Label name -> attribute name -> input_type, from <meta>'s label declarations.
using AttributeTypes = std::map<std::string, std::map<std::string, std::string>>;

void readLabels(const XMLElement* labels, std::vector<std::string>* names, AttributeTypes* types) {
  if (labels == nullptr) return;
  for (const XMLElement* label = labels->FirstChildElement("label"); label != nullptr;
       label = label->NextSiblingElement("label")) {
    const XMLElement* name = label->FirstChildElement("name");
    if (name == nullptr || name->GetText() == nullptr) continue;
    const std::string label_name = name->GetText();
    if (std::find(names->begin(), names->end(), label_name) == names->end()) names->push_back(label_name);
    const XMLElement* attributes = label->FirstChildElement("attributes");
    for (const XMLElement* a = attributes ? attributes->FirstChildElement("attribute") : nullptr;
         a != nullptr; a = a->NextSiblingElement("attribute")) {
      const XMLElement* an = a->FirstChildElement("name");
      const XMLElement* at = a->FirstChildElement("input_type");
      if (an && an->GetText() && at && at->GetText()) (*types)[label_name][an->GetText()] = at->GetText();
    }
  }
}

Attribute typedAttribute(const std::string& name, const std::string& value, const std::string& type) {
  if (type == "checkbox" && (value == "true" || value == "false")) {
    return {name, value, Attribute::Kind::kBool};
  }
  if (type == "number" && parseDouble(value)) return {name, value, Attribute::Kind::kNumber};
  return {name, value, Attribute::Kind::kString};
}

// The image file: beside the XML under images/<subset>/ (project exports), images/, or as the
// name says relative to the XML's folder.
fs::path findImage(const fs::path& dir, const std::string& name, const std::string& subset) {
  std::vector<fs::path> candidates;
  if (!subset.empty()) candidates.push_back(dir / "images" / subset / name);
  candidates.push_back(dir / "images" / name);
  candidates.push_back(dir / name);
  for (const fs::path& p : candidates) {
    if (fs::exists(p)) return p.lexically_normal();
  }
  return candidates.front().lexically_normal();
}

// CVAT's mask RLE: comma-separated run lengths over the width x height region at left/top,
// row-major, the first run background. Pasted into a mask of the image's size.
std::optional<Rle> readCvatMask(const XMLElement* e, uint32_t image_w, uint32_t image_h,
                                std::string* why) {
  const auto left = parseInt(attr(e, "left")), top = parseInt(attr(e, "top"));
  const auto width = parseInt(attr(e, "width")), height = parseInt(attr(e, "height"));
  if (!left || !top || !width || !height || *width <= 0 || *height <= 0) {
    *why = "a mask without integer left/top/width/height";
    return std::nullopt;
  }
  cv::Mat region = cv::Mat::zeros(static_cast<int>(*height), static_cast<int>(*width), CV_8UC1);
  const std::string_view rle = attr(e, "rle");
  const auto total = static_cast<uint64_t>(*width) * static_cast<uint64_t>(*height);
  uint64_t at = 0;
  bool foreground = false;
  size_t start = 0;
  while (start < rle.size()) {
    const size_t end = std::min(rle.find(',', start), rle.size());
    const auto run = parseInt(rle.substr(start, end - start));
    if (!run || *run < 0 || at + static_cast<uint64_t>(*run) > total) {
      *why = "its rle is not a list of run lengths within width x height";
      return std::nullopt;
    }
    if (foreground) {
      uint8_t* data = region.ptr<uint8_t>();
      std::fill(data + at, data + at + *run, uint8_t{1});
    }
    at += static_cast<uint64_t>(*run);
    foreground = !foreground;
    start = end + 1;
  }
  cv::Mat full = cv::Mat::zeros(static_cast<int>(image_h), static_cast<int>(image_w), CV_8UC1);
  const cv::Rect target = cv::Rect(static_cast<int>(*left), static_cast<int>(*top), region.cols, region.rows) &
                          cv::Rect(0, 0, full.cols, full.rows);
  if (target.area() > 0) {
    region(cv::Rect(target.x - static_cast<int>(*left), target.y - static_cast<int>(*top),
                    target.width, target.height))
        .copyTo(full(target));
  }
  return encodeMask(full);
}

}  // namespace

ImportedDataset readCvat(const ReadContext& context) {
  fs::path xml_path = context.input;
  if (fs::is_directory(xml_path)) {
    xml_path = context.input / "annotations.xml";
    if (!fs::exists(xml_path)) {
      std::vector<fs::path> xmls;
      for (const auto& e : fs::directory_iterator(context.input)) {
        if (e.path().extension() == ".xml") xmls.push_back(e.path());
      }
      if (xmls.size() != 1) {
        throw ImportError(display(context.input), "",
                          xmls.empty() ? "no CVAT .xml file in this folder"
                                       : "several .xml files and no annotations.xml: give the file");
      }
      xml_path = xmls.front();
    }
  }
  const std::string file = display(xml_path);
  const std::string text = readFileOrThrow(xml_path);
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    throw ImportError(file, "line " + std::to_string(doc.ErrorLineNum()),
                      std::string("malformed XML: ") + doc.ErrorStr());
  }
  const XMLElement* root = doc.RootElement();
  if (root == nullptr || std::string_view(root->Name()) != "annotations") {
    throw ImportError(file, root ? lineOf(root) : "", "not a CVAT XML file: the root element is not <annotations>");
  }
  ImportedDataset dataset;
  AttributeTypes attribute_types;
  if (const XMLElement* meta = root->FirstChildElement("meta")) {
    for (const char* owner : {"task", "project", "job"}) {
      if (const XMLElement* o = meta->FirstChildElement(owner)) {
        readLabels(o->FirstChildElement("labels"), &dataset.declared_labels, &attribute_types);
      }
    }
  }
  ProblemLog& log = *context.log;
  const fs::path dir = xml_path.parent_path();
  for (const XMLElement* track = root->FirstChildElement("track"); track != nullptr;
       track = track->NextSiblingElement("track")) {
    log.skip("shape_type_skipped", file, lineOf(track), "a <track> (video annotation): skipped");
  }
  size_t image_number = 0;
  for (const XMLElement* img = root->FirstChildElement("image"); img != nullptr;
       img = img->NextSiblingElement("image"), ++image_number) {
    const std::string name = attr(img, "name");
    const auto w = parseInt(attr(img, "width")), h = parseInt(attr(img, "height"));
    if (name.empty() || !w || !h || *w <= 0 || *h <= 0 || *w > UINT32_MAX || *h > UINT32_MAX) {
      log.skip("bad_image", file, lineOf(img), "an <image> without name or positive width/height: skipped");
      continue;
    }
    ImportedImage image;
    image.split = attr(img, "subset");
    image.path = findImage(dir, name, image.split);
    image.source = file;
    image.width = static_cast<uint32_t>(*w);
    image.height = static_cast<uint32_t>(*h);
    const auto image_index = static_cast<uint32_t>(dataset.images.size());
    dataset.images.push_back(image);

    for (const XMLElement* e = img->FirstChildElement(); e != nullptr; e = e->NextSiblingElement()) {
      const std::string kind = e->Name();
      const std::string place = lineOf(e);
      const std::string label = attr(e, "label");
      if (kind != "polygon" && kind != "box" && kind != "mask") {
        log.skip("shape_type_skipped", file, place,
                 "a <" + kind + "> (label \"" + label + "\") is not an instance: skipped");
        continue;
      }
      if (label.empty()) {
        log.skip("no_label", file, place, "a <" + kind + "> without a label: skipped");
        continue;
      }
      ImportedInstance instance;
      instance.image = image_index;
      instance.label = label;
      instance.file = file;
      instance.place = place;
      if (kind == "polygon") {
        std::optional<Polygon> points = parsePoints(attr(e, "points"));
        if (!points) {
          log.skip("bad_shape", file, place, "points is not \"x,y;x,y;...\": skipped");
          continue;
        }
        instance.polygons.push_back(std::move(*points));
      } else if (kind == "box") {
        const auto x1 = parseDouble(attr(e, "xtl")), y1 = parseDouble(attr(e, "ytl"));
        const auto x2 = parseDouble(attr(e, "xbr")), y2 = parseDouble(attr(e, "ybr"));
        if (!x1 || !y1 || !x2 || !y2) {
          log.skip("bad_shape", file, place, "a box without numeric xtl/ytl/xbr/ybr: skipped");
          continue;
        }
        const double rotation = parseDouble(attr(e, "rotation")).value_or(0.0);
        if (rotation != 0.0) {
          // A rotated box is a region, not an axis-aligned box: its four corners.
          const double cx = (*x1 + *x2) / 2, cy = (*y1 + *y2) / 2;
          const double a = rotation * 3.14159265358979323846 / 180.0;
          Polygon corners;
          for (const auto& [dx, dy] : {std::pair{*x1 - cx, *y1 - cy}, std::pair{*x2 - cx, *y1 - cy},
                                       std::pair{*x2 - cx, *y2 - cy}, std::pair{*x1 - cx, *y2 - cy}}) {
            corners.push_back(cx + dx * std::cos(a) - dy * std::sin(a));
            corners.push_back(cy + dx * std::sin(a) + dy * std::cos(a));
          }
          instance.polygons.push_back(std::move(corners));
        } else {
          instance.box = Box{*x1, *y1, *x2 - *x1, *y2 - *y1};
        }
      } else {
        std::string why;
        std::optional<Rle> mask = readCvatMask(e, image.width, image.height, &why);
        if (!mask) {
          log.skip("bad_shape", file, place, why + ": skipped");
          continue;
        }
        instance.mask = std::move(*mask);
      }
      instance.attributes.push_back({"occluded", std::string_view(attr(e, "occluded")) == "1" ? "true" : "false",
                                     Attribute::Kind::kBool});
      if (const auto z = parseInt(attr(e, "z_order"))) {
        instance.attributes.push_back({"z_order", std::to_string(*z), Attribute::Kind::kNumber});
      }
      const auto& types = attribute_types[label];
      for (const XMLElement* a = e->FirstChildElement("attribute"); a != nullptr;
           a = a->NextSiblingElement("attribute")) {
        const std::string attribute_name = attr(a, "name");
        const auto type = types.find(attribute_name);
        instance.attributes.push_back(typedAttribute(attribute_name, a->GetText() ? a->GetText() : "",
                                                     type != types.end() ? type->second : ""));
      }
      dataset.instances.push_back(std::move(instance));
    }
  }
  if (image_number == 0) throw ImportError(file, "", "no <image> elements: nothing to import");
  return dataset;
}

}  // namespace mrcnn::dataset::import
