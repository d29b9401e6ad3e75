// The mask API's IoU benchmark driver (scripts/bench_mask_api.py runs it beside pycocotools'
// maskUtils.iou); not a test. Builds COCO-like calls (480x640 images, star-shaped objects,
// detections jittered around them, the first ground truth of each call a crowd), times our
// side and writes the inputs and our matrices for the script, which times pycocotools on the
// same inputs and checks that every matrix is equal.
//
//   bench_mask_api --out DIR [--calls N] [--dts D] [--gts G]
//
// Writes DIR/bench.json ({"h", "w", "images": [{"dt", "gt": [compressed counts],
// "dt_boxes", "gt_boxes": [[x, y, w, h]], "iscrowd": [0/1]}]}), DIR/segm.bin and
// DIR/bbox.bin (every call's IoU matrix, row-major doubles one after the other) and prints
// one JSON object: calls, dts, gts, decode_s (our string decode), segm_s, bbox_s (best of 3).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/json_writer.h"
#include "dataset/mask/rle.h"

using namespace mrcnn::dataset;
using mrcnn::io::JsonWriter;
namespace fs = std::filesystem;

namespace {

// The draws of the mask API tests' generator (tests/dataset/mask_api_test.h), seeded as the
// benchmark always was: the inputs of the results written down in docs/BENCHMARKS.md.
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return n <= 0 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  }

 private:
  std::mt19937_64 rng_;
};

constexpr uint32_t kH = 480, kW = 640;

// One maskUtils.iou call as COCOeval.computeIoU makes it: the masks as compressed strings
// (what loadRes and annToRLE leave), the boxes, the crowd flags.
struct Call {
  std::vector<std::string> dt, gt;
  std::vector<Box> dtBoxes, gtBoxes;
  std::vector<uint8_t> crowd;
};

std::vector<Call> makeCalls(int calls, int dts, int gts) {
  std::vector<Call> data(static_cast<size_t>(calls));
  Random r(2024);
  for (Call& im : data) {
    std::vector<Polygon> shapes;
    for (int g = 0; g < gts; ++g) {
      const double cx = r.uniform(0, kW), cy = r.uniform(0, kH), size = r.uniform(8, 150);
      Polygon xy;
      const int points = 8 + r.pick(24);
      for (int i = 0; i < points; ++i) {
        const double a = 6.283185307179586 * i / points, rad = size * r.uniform(0.5, 1);
        xy.push_back(cx + rad * std::cos(a));
        xy.push_back(cy + rad * std::sin(a));
      }
      shapes.push_back(xy);
      const Rle rle = rleFromPolygon(xy, kH, kW);
      im.gt.push_back(toCompressedString(rle));
      im.gtBoxes.push_back(toBbox(rle));
      im.crowd.push_back(g == 0);
    }
    for (int d = 0; d < dts; ++d) {
      Polygon xy = shapes[static_cast<size_t>(r.pick(gts))];
      const double dx = r.uniform(-20, 20), dy = r.uniform(-20, 20), s = r.uniform(0.7, 1.3);
      for (size_t i = 0; i < xy.size(); i += 2) {
        xy[i] = xy[0] + (xy[i] - xy[0]) * s + dx + r.uniform(-3, 3);
        xy[i + 1] = xy[1] + (xy[i + 1] - xy[1]) * s + dy + r.uniform(-3, 3);
      }
      const Rle rle = rleFromPolygon(xy, kH, kW);
      im.dt.push_back(toCompressedString(rle));
      im.dtBoxes.push_back(toBbox(rle));
    }
  }
  return data;
}

void writeBox(JsonWriter& json, const Box& box) {
  json.beginArray();
  for (double v : box)
    json.value(v);
  json.endArray();
}

void writeInputs(const fs::path& file, const std::vector<Call>& data) {
  std::ofstream out(file);
  JsonWriter json(out);
  json.beginObject().key("h").value(kH).key("w").value(kW).key("images").beginArray();
  for (const Call& im : data) {
    json.beginObject();
    for (const auto& [key, strings] : {std::pair{"dt", &im.dt}, std::pair{"gt", &im.gt}}) {
      json.key(key).beginArray();
      for (const std::string& s : *strings)
        json.value(s);
      json.endArray();
    }
    for (const auto& [key, boxes] :
         {std::pair{"dt_boxes", &im.dtBoxes}, std::pair{"gt_boxes", &im.gtBoxes}}) {
      json.key(key).beginArray();
      for (const Box& b : *boxes)
        writeBox(json, b);
      json.endArray();
    }
    json.key("iscrowd").beginArray();
    for (uint8_t c : im.crowd)
      json.value(c);
    json.endArray().endObject();
  }
  json.endArray().endObject();
  out.close();
  if (!json.complete() || !out) throw std::runtime_error("cannot write " + file.string());
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int usage() {
  std::fprintf(stderr, "usage: bench_mask_api --out DIR [--calls N] [--dts D] [--gts G]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir;
  int calls = 100, dts = 100, gts = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--out") {
        dir = value();
      } else if (arg == "--calls") {
        calls = std::stoi(value());
      } else if (arg == "--dts") {
        dts = std::stoi(value());
      } else if (arg == "--gts") {
        gts = std::stoi(value());
      } else {
        return usage();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_mask_api: %s\n", e.what());
      return usage();
    }
  }
  if (dir.empty() || calls < 1 || dts < 1 || gts < 1) return usage();
  try {
    const std::vector<Call> data = makeCalls(calls, dts, gts);

    // Ours: decode the strings once (what an evaluator does per annotation), then iou.
    using Clock = std::chrono::steady_clock;
    std::vector<std::vector<Rle>> dtRles(data.size()), gtRles(data.size());
    const auto t0 = Clock::now();
    for (size_t i = 0; i < data.size(); ++i) {
      for (const std::string& s : data[i].dt)
        dtRles[i].push_back(fromCompressedString(s, kH, kW));
      for (const std::string& s : data[i].gt)
        gtRles[i].push_back(fromCompressedString(s, kH, kW));
    }
    const double decodeSeconds = seconds(Clock::now() - t0);
    std::ofstream segmOut(dir / "segm.bin", std::ios::binary);
    std::ofstream bboxOut(dir / "bbox.bin", std::ios::binary);
    IouMatrix m;
    double segmSeconds = 0, bboxSeconds = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {  // best of 3, like the Python side
      auto t = Clock::now();
      for (size_t i = 0; i < data.size(); ++i) {
        iou(dtRles[i], gtRles[i], data[i].crowd, m);
        if (repeat == 0) {
          segmOut.write(reinterpret_cast<const char*>(m.values.data()),
                        static_cast<std::streamsize>(m.values.size() * sizeof(double)));
        }
      }
      const double segm = seconds(Clock::now() - t);
      t = Clock::now();
      for (size_t i = 0; i < data.size(); ++i) {
        iou(data[i].dtBoxes, data[i].gtBoxes, data[i].crowd, m);
        if (repeat == 0) {
          bboxOut.write(reinterpret_cast<const char*>(m.values.data()),
                        static_cast<std::streamsize>(m.values.size() * sizeof(double)));
        }
      }
      const double bbox = seconds(Clock::now() - t);
      segmSeconds = repeat == 0 ? segm : std::min(segmSeconds, segm);
      bboxSeconds = repeat == 0 ? bbox : std::min(bboxSeconds, bbox);
    }
    segmOut.close();
    bboxOut.close();
    if (!segmOut || !bboxOut)
      throw std::runtime_error("cannot write the matrices in " + dir.string());
    writeInputs(dir / "bench.json", data);
    std::printf(
        "{\"calls\": %d, \"dts\": %d, \"gts\": %d, \"decode_s\": %.6f, \"segm_s\": %.6f, "
        "\"bbox_s\": %.6f}\n",
        calls, dts, gts, decodeSeconds, segmSeconds, bboxSeconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mask_api: %s\n", e.what());
    return 1;
  }
  return 0;
}
