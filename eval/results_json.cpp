#include "eval/results_json.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

namespace mrcnn::eval {
namespace {

namespace od = simdjson::ondemand;
using dataset::CocoError;

class Reader {
 public:
  Reader(const std::filesystem::path& path, const simdjson::padded_string& json)
      : file_(path.string()), base_(json.data()) {}

  [[noreturn]] void fail(const char* at, const std::string& key_path,
                         const std::string& reason) const {
    const uint64_t offset = at ? static_cast<uint64_t>(at - base_) : 0;
    throw CocoError(file_, offset, key_path, reason);
  }
  const char* where(od::value& v) const {
    const std::string_view raw = v.raw_json_token();
    return raw.data();
  }
  uint64_t offsetOf(const char* at) const { return at ? static_cast<uint64_t>(at - base_) : 0; }

  double number(od::value v, const std::string& path) {
    const char* at = where(v);
    double out = 0;
    if (v.get_double().get(out) != simdjson::SUCCESS) fail(at, path, "expected a number");
    return out;
  }
  int64_t integer(od::value v, const std::string& path) {
    const char* at = where(v);
    int64_t out = 0;
    if (v.get_int64().get(out) == simdjson::SUCCESS) return out;
    // json.load turns 3.0 into a float that pycocotools compares equal to 3; accept that.
    double d = 0;
    if (v.get_double().get(d) == simdjson::SUCCESS && std::floor(d) == d && std::abs(d) < 9e15) {
      return static_cast<int64_t>(d);
    }
    fail(at, path, "expected an integer id");
  }

 private:
  std::string file_;
  const char* base_;
};

struct RawResult {
  int64_t image_id = 0, category_id = 0;
  bool has_image = false, has_category = false, has_score = false;
  bool has_bbox = false, bbox_empty = true;
  dataset::Box bbox{};
  double score = 0;
  enum class Seg { None, Compressed, Polygons } seg = Seg::None;
  uint32_t h = 0, w = 0;
  std::string counts;
  std::vector<dataset::Polygon> polygons;
  const char* at = nullptr;
};

}  // namespace

ImageSizes imageSizes(const dataset::CocoDataset& coco) {
  ImageSizes sizes;
  for (const auto& image : coco.images())
    sizes[image.id] = {image.height, image.width};
  return sizes;
}

EvalSet groundTruthSet(const dataset::CocoDataset& coco, IouType type) {
  EvalSet set;
  for (const auto& image : coco.images())
    set.image_ids.push_back(image.id);
  for (const auto& category : coco.categories())
    set.category_ids.push_back(category.id);
  set.ground_truths.reserve(coco.annotations().size());
  for (const auto& a : coco.annotations()) {
    GroundTruth g;
    g.id = a.id;
    g.image_id = a.image_id;
    g.category_id = a.category_id;
    g.bbox = a.bbox;
    g.area = a.area;
    g.iscrowd = a.iscrowd;
    if (type == IouType::Segm) g.mask = dataset::annotationRle(coco, a);
    set.ground_truths.push_back(std::move(g));
  }
  return set;
}

LoadedResults loadResults(const std::filesystem::path& path, const ImageSizes& images,
                          const std::vector<int64_t>& category_ids) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path.string()).get(json) != simdjson::SUCCESS) {
    std::error_code ec;
    throw CocoError(path.string(), std::filesystem::exists(path, ec)
                                       ? "cannot read the results file"
                                       : "no such results file");
  }
  Reader reader(path, json);
  od::parser parser;
  od::document doc;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS) {
    throw CocoError(path.string(), 0, "", "not JSON");
  }
  od::array array;
  if (doc.get_array().get(array) != simdjson::SUCCESS) {
    throw CocoError(path.string(), 0, "", "expected an array of results at the top level");
  }

  std::vector<RawResult> raw;
  std::size_t index = 0;
  simdjson::error_code walk = simdjson::SUCCESS;
  for (auto element : array) {
    const std::string item = "[" + std::to_string(index) + "]";
    od::value value;
    if ((walk = element.get(value)) != simdjson::SUCCESS) break;
    const char* at = reader.where(value);
    od::object object;
    if (value.get_object().get(object) != simdjson::SUCCESS) {
      reader.fail(at, item, "expected an object");
    }
    RawResult r;
    r.at = at;
    for (auto field : object) {
      std::string_view key;
      od::value v;
      if ((walk = field.unescaped_key().get(key)) != simdjson::SUCCESS) break;
      if ((walk = field.value().get(v)) != simdjson::SUCCESS) break;
      const std::string key_path = item + "." + std::string(key);
      if (key == "image_id") {
        r.image_id = reader.integer(v, key_path);
        r.has_image = true;
      } else if (key == "category_id") {
        r.category_id = reader.integer(v, key_path);
        r.has_category = true;
      } else if (key == "score") {
        r.score = reader.number(v, key_path);
        r.has_score = true;
      } else if (key == "bbox") {
        const char* bat = reader.where(v);
        od::array box;
        if (v.get_array().get(box) != simdjson::SUCCESS)
          reader.fail(bat, key_path, "expected [x, y, w, h]");
        std::size_t n = 0;
        for (auto x : box) {
          od::value xv;
          if (x.get(xv) != simdjson::SUCCESS) reader.fail(bat, key_path, "malformed array");
          const std::string p = key_path + "[" + std::to_string(n) + "]";
          const double number = reader.number(xv, p);
          if (n < 4) r.bbox[n] = number;
          ++n;
        }
        if (n != 0 && n != 4)
          reader.fail(bat, key_path, "expected 4 numbers [x, y, w, h], got " + std::to_string(n));
        r.has_bbox = true;
        r.bbox_empty = n == 0;
      } else if (key == "segmentation") {
        const char* sat = reader.where(v);
        od::json_type type;
        if (v.type().get(type) != simdjson::SUCCESS) reader.fail(sat, key_path, "malformed value");
        if (type == od::json_type::object) {
          od::object rle;
          if (v.get_object().get(rle) != simdjson::SUCCESS)
            reader.fail(sat, key_path, "malformed object");
          bool has_size = false, has_counts = false;
          for (auto rf : rle) {
            std::string_view rk;
            od::value rv;
            if (rf.unescaped_key().get(rk) != simdjson::SUCCESS ||
                rf.value().get(rv) != simdjson::SUCCESS) {
              reader.fail(sat, key_path, "malformed object");
            }
            const std::string rp = key_path + "." + std::string(rk);
            if (rk == "size") {
              const char* zat = reader.where(rv);
              od::array size;
              if (rv.get_array().get(size) != simdjson::SUCCESS)
                reader.fail(zat, rp, "expected [height, width]");
              std::vector<int64_t> hw;
              for (auto s : size) {
                od::value sv;
                if (s.get(sv) != simdjson::SUCCESS) reader.fail(zat, rp, "malformed array");
                hw.push_back(reader.integer(sv, rp + "[" + std::to_string(hw.size()) + "]"));
              }
              if (hw.size() != 2 || hw[0] < 0 || hw[1] < 0)
                reader.fail(zat, rp, "expected [height, width]");
              r.h = static_cast<uint32_t>(hw[0]);
              r.w = static_cast<uint32_t>(hw[1]);
              has_size = true;
            } else if (rk == "counts") {
              const char* cat = reader.where(rv);
              std::string_view counts;
              if (rv.get_string().get(counts) != simdjson::SUCCESS) {
                reader.fail(cat, rp,
                            "expected a compressed RLE string (results take compressed RLE only, "
                            "as pycocotools' loadRes)");
              }
              r.counts = std::string(counts);
              has_counts = true;
            }
          }
          if (!has_size || !has_counts)
            reader.fail(sat, key_path, "an RLE needs \"size\" and \"counts\"");
          r.seg = RawResult::Seg::Compressed;
        } else if (type == od::json_type::array) {
          od::array list;
          if (v.get_array().get(list) != simdjson::SUCCESS)
            reader.fail(sat, key_path, "malformed array");
          std::size_t pi = 0;
          for (auto poly : list) {
            od::value pv;
            od::array coords;
            const std::string pp = key_path + "[" + std::to_string(pi) + "]";
            if (poly.get(pv) != simdjson::SUCCESS ||
                pv.get_array().get(coords) != simdjson::SUCCESS) {
              reader.fail(sat, pp, "expected a polygon [x0, y0, x1, y1, ...]");
            }
            dataset::Polygon polygon;
            for (auto c : coords) {
              od::value cv;
              if (c.get(cv) != simdjson::SUCCESS) reader.fail(sat, pp, "malformed array");
              polygon.push_back(reader.number(cv, pp + "[" + std::to_string(polygon.size()) + "]"));
            }
            r.polygons.push_back(std::move(polygon));
            ++pi;
          }
          r.seg = RawResult::Seg::Polygons;
        } else {
          reader.fail(sat, key_path, "expected an RLE object or a list of polygons");
        }
      }
    }
    if (walk != simdjson::SUCCESS) break;
    raw.push_back(std::move(r));
    ++index;
  }
  if (walk != simdjson::SUCCESS) {
    const char* at = nullptr;
    if (doc.current_location().get(at) != simdjson::SUCCESS) at = nullptr;
    reader.fail(at, "[" + std::to_string(index) + "]",
                std::string("malformed JSON: ") + simdjson::error_message(walk));
  }

  LoadedResults out;
  if (raw.empty()) return out;
  const bool box_results = raw.front().has_bbox && !raw.front().bbox_empty;
  if (!box_results && raw.front().seg == RawResult::Seg::None) {
    reader.fail(raw.front().at, "[0]", "a result needs a non-empty \"bbox\" or a \"segmentation\"");
  }
  const std::set<int64_t> categories(category_ids.begin(), category_ids.end());
  out.detections.reserve(raw.size());
  out.has_masks = true;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    RawResult& r = raw[i];
    const std::string item = "[" + std::to_string(i) + "]";
    if (!r.has_image) reader.fail(r.at, item, "no \"image_id\"");
    if (!r.has_category) reader.fail(r.at, item, "no \"category_id\"");
    if (!r.has_score) reader.fail(r.at, item, "no \"score\"");
    const auto image = images.find(r.image_id);
    if (image == images.end()) {
      reader.fail(r.at, item + ".image_id",
                  "image " + std::to_string(r.image_id) +
                      " is not in the ground truth (pycocotools: results do not correspond to "
                      "the current coco set)");
    }
    if (!categories.count(r.category_id)) {
      out.warnings.push_back({"category " + std::to_string(r.category_id) +
                                  " is not in the ground truth: the result takes no part",
                              i, reader.offsetOf(r.at)});
    }
    Detection d;
    d.id = static_cast<int64_t>(i) + 1;
    d.image_id = r.image_id;
    d.category_id = r.category_id;
    d.score = r.score;
    const auto [h, w] = image->second;
    try {
      if (box_results) {
        if (!r.has_bbox || r.bbox_empty)
          reader.fail(r.at, item, "no \"bbox\" (the first result has one)");
        d.bbox = r.bbox;
        d.area = r.bbox[2] * r.bbox[3];
        if (r.seg == RawResult::Seg::Compressed) {
          d.mask = dataset::fromCompressedString(r.counts, r.h, r.w);
        } else if (r.seg == RawResult::Seg::Polygons) {
          d.mask = dataset::rleFromSegmentationList(r.polygons, h, w);
        } else {
          out.has_masks = false;  // the box becomes the mask only if segm is evaluated
        }
      } else {
        if (r.seg != RawResult::Seg::Compressed) {
          reader.fail(r.at, item + ".segmentation",
                      "expected a compressed RLE (the first result has no bbox)");
        }
        d.mask = dataset::fromCompressedString(r.counts, r.h, r.w);
        d.area = static_cast<double>(dataset::area(d.mask));
        d.bbox = r.has_bbox && !r.bbox_empty ? r.bbox : dataset::toBbox(d.mask);
      }
    } catch (const std::invalid_argument& e) {
      reader.fail(r.at, item + ".segmentation", e.what());
    }
    out.detections.push_back(std::move(d));
  }
  return out;
}

void rasterizeBoxMasks(LoadedResults& results, const ImageSizes& images) {
  std::vector<Detection>& all = results.detections;
  const auto work = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      Detection& d = all[i];
      if (d.mask.h != 0 || d.mask.w != 0) continue;
      const auto [h, w] = images.at(d.image_id);
      // loadRes makes the box a polygon: x1,y1, x1,y2, x2,y2, x2,y1.
      const double x1 = d.bbox[0], x2 = d.bbox[0] + d.bbox[2];
      const double y1 = d.bbox[1], y2 = d.bbox[1] + d.bbox[3];
      const dataset::Polygon box_polygon = {x1, y1, x1, y2, x2, y2, x2, y1};
      d.mask = dataset::rleFromSegmentationList(std::span(&box_polygon, 1), h, w);
    }
  };
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1,
                                            std::max<size_t>(1, all.size() / 4096));
  std::vector<std::thread> pool;
  const size_t chunk = (all.size() + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work, std::min(all.size(), t * chunk), std::min(all.size(), (t + 1) * chunk));
  work(0, std::min(all.size(), chunk));
  for (std::thread& t : pool)
    t.join();
  results.has_masks = true;
}

}  // namespace mrcnn::eval
