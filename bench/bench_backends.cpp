// The inference backends' speed (scripts/bench_export.py runs it beside the Python peers; not
// a test, not installed):
//
//   bench_backends --spec SPEC --checkpoint WEIGHTS --onnx MODEL.onnx --images DIR
//                  [--warmup 1] [--iters 5] [--out DIR] [--only NAME,NAME...]
//
// --only runs the backends named (ours_libtorch_fp32, ours_libtorch_bf16, ours_openvino_f32,
// ours_openvino_bf16); --onnx is needed only for OpenVINO's (scripts/bench_prune.py times
// LibTorch's alone on pruned models).
// Per backend (LibTorch fp32, LibTorch bf16 autocast, OpenVINO f32, OpenVINO bf16 where the
// CPU has it), each image of DIR is run alone, `warmup` times untimed then `iters` times
// timed: one JSON line per backend with the median per-image latency (decoding the file and
// pasting the masks included, as the inference task does them; the decoding's own median is
// printed once). OUT/<backend>.json gets the last run's detections (boxes in the file's
// pixels, labels, scores) for the script to compare.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataset/image/decode_image.h"
#include "io/json_writer.h"
#include "engine/inference/libtorch_backend.h"
#include "engine/inference/openvino_backend.h"
#include "engine/setup/categories.h"
#include "engine/setup/model_config.h"
#include "engine/setup/weights.h"
#include "specs/spec.h"

namespace {

namespace fs = std::filesystem;
using namespace mrcnn;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <typename F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void writeDetections(const fs::path& file, const engine::BackendRun& run,
                     const std::vector<int64_t>& category_ids) {
  std::ofstream out(file);
  io::JsonWriter j(out);
  j.beginObject();
  for (const engine::BackendImage& image : run.images) {
    const model::ImageDetections& d = image.detections;
    j.key(image.input.path.filename().string()).beginObject();
    j.key("boxes").beginArray();
    const at::Tensor boxes = d.boxes.to(at::kDouble).contiguous();
    for (int64_t k = 0; k < boxes.size(0); ++k) {
      j.beginArray();
      for (int c = 0; c < 4; ++c)
        j.value(boxes[k][c].item<double>());
      j.endArray();
    }
    j.endArray();
    j.key("labels").beginArray();
    for (int64_t k = 0; k < d.labels.size(0); ++k)
      j.value(category_ids.at(static_cast<size_t>(d.labels[k].item<int64_t>())));
    j.endArray();
    j.key("scores").beginArray();
    for (int64_t k = 0; k < d.scores.size(0); ++k)
      j.value(d.scores[k].item<double>());
    j.endArray();
    j.endObject();
  }
  j.endObject();
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a{{"--warmup", "1"}, {"--iters", "5"}, {"--out", "."}};
  for (int i = 1; i + 1 < argc; i += 2)
    a[argv[i]] = argv[i + 1];
  const std::string only = a.count("--only") ? "," + a["--only"] + "," : std::string();
  const auto wanted = [&](const std::string& name) {
    return only.empty() || only.find("," + name + ",") != std::string::npos;
  };
  const bool needs_onnx = wanted("ours_openvino_f32") || wanted("ours_openvino_bf16");
  for (const char* required : {"--spec", "--checkpoint", "--onnx", "--images"}) {
    if (!a.count(required) && (needs_onnx || std::string(required) != "--onnx")) {
      std::cerr << "bench_backends: " << required << " is required\n";
      return 2;
    }
  }
  spec::LoadedSpec spec_file = spec::loadSpecFile(a["--spec"], {"device=cpu"});
  spec_file.dropTrainingRequirements();
  for (const auto& d : spec_file.diagnostics)
    std::cerr << d.format() << '\n';
  if (!spec_file.ok()) return 3;
  const spec::LoadedSpec* loaded = &spec_file;
  const int warmup = std::stoi(a["--warmup"]), iters = std::stoi(a["--iters"]);
  const std::vector<fs::path> images = engine::listImages(a["--images"]);
  const auto make_model = [&] {
    model::MaskRCNN net = engine::loadModel(
        engine::modelOptionsFromSpec(loaded->spec, loaded->resolved), a["--checkpoint"]);
    return net;
  };
  const std::vector<engine::Category> categories =
      engine::categoryTable({}, make_model()->numClasses(),
                            loaded->spec.data_config().category_labels() == "category_id");
  std::vector<int64_t> category_ids;
  for (const engine::Category& c : categories)
    category_ids.push_back(c.id);

  std::vector<double> decode;
  for (const fs::path& p : images)
    decode.push_back(seconds([&] { dataset::readImageFile(p); }));
  std::cout << "{\"decode_ms\": " << 1000 * median(decode) << "}" << std::endl;

  struct Config {
    std::string name;
    std::function<std::unique_ptr<engine::InferenceBackend>()> make;
  };
  const engine::InputOptions input = engine::inputOptionsFromSpec(loaded->spec, loaded->resolved);
  const auto libtorch = [&](bool bf16) {
    engine::Precision p;
    if (bf16) p = {true, at::kBFloat16, "bf16", ""};
    return engine::makeLibTorchBackend(make_model(), input, c10::Device(c10::kCPU), p);
  };
  const auto openvino = [&](bool bf16) {
    engine::OpenVinoOptions o;
    o.onnx = a["--onnx"];
    o.bf16 = bf16;
    o.category_ids = category_ids;
    return engine::makeOpenVinoBackend(o);
  };
  const std::vector<Config> configs = {{"ours_libtorch_fp32", [&] { return libtorch(false); }},
                                       {"ours_libtorch_bf16", [&] { return libtorch(true); }},
                                       {"ours_openvino_f32", [&] { return openvino(false); }},
                                       {"ours_openvino_bf16", [&] { return openvino(true); }}};
  for (const Config& config : configs) {
    if (!wanted(config.name)) continue;
    std::unique_ptr<engine::InferenceBackend> backend = config.make();
    engine::BackendRun last;
    std::vector<double> times;
    for (int it = 0; it < warmup + iters; ++it) {
      for (const fs::path& p : images) {
        const double s = seconds([&] { last = backend->run({p}); });
        if (it >= warmup) times.push_back(s);
      }
      if (it + 1 == warmup + iters) {
        // All images' detections of the last round, for the comparison.
        last = backend->run(images);
      }
    }
    writeDetections(fs::path(a["--out"]) / (config.name + ".json"), last, category_ids);
    std::cout << "{\"name\": \"" << config.name << "\", \"precision\": \"" << backend->precision()
              << "\", \"median_ms\": " << 1000 * median(times) << ", \"description\": \""
              << backend->description() << "\"}" << std::endl;
  }
  return 0;
}
