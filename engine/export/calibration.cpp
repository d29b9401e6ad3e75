#include "engine/export/calibration.h"

#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "io/atomic_file.h"
#include "io/json_writer.h"
#include "weights/sha256.h"

namespace mrcnn::exporter {
namespace {

constexpr int64_t kBins = 2048;
constexpr const char* kFormat = "mrcnn-workbench int8 calibration 1";

// The values below which `share` of the elements fall, from a histogram over [lo, hi]:
// the upper edge of the bin where the running count reaches it.
double edgeAt(const at::Tensor& counts, double lo, double hi, double share) {
  const at::Tensor cumulative = counts.cumsum(0);
  const double total = cumulative[-1].item<double>();
  const double target = share * total;
  const int64_t bin = (cumulative < target).sum().item<int64_t>();
  const double width = (hi - lo) / static_cast<double>(kBins);
  return lo + width * static_cast<double>(std::min(bin + 1, kBins));
}

// The cache's "input_means": per layer its outputs counted, the shape and as many finite values.
InputMeans readInputMeans(simdjson::dom::object means, const std::string& where) {
  InputMeans out;
  for (const auto field : means) {
    const std::string name(field.key);
    const auto bad = [&](const std::string& what) {
      return CalibrationCacheError(where + "input_means \"" + name + "\": " + what);
    };
    InputMean m;
    simdjson::dom::array shape, values;
    if (field.value["positions"].get(m.positions) != simdjson::SUCCESS || m.positions <= 0)
      throw bad("\"positions\" missing or not a whole number above 0");
    if (field.value["shape"].get(shape) != simdjson::SUCCESS ||
        field.value["values"].get(values) != simdjson::SUCCESS) {
      throw bad("\"shape\" or \"values\" missing or not a list");
    }
    int64_t count = 1;
    for (const auto d : shape) {
      int64_t v = 0;
      if (d.get(v) != simdjson::SUCCESS || v <= 0) throw bad("\"shape\" holds a size below 1");
      m.shape.push_back(v);
      count *= v;
    }
    for (const auto v : values) {
      double x = 0;
      if (v.get(x) != simdjson::SUCCESS || !std::isfinite(x)) throw bad("a value is not a number");
      m.values.push_back(x);
    }
    if (m.shape.empty() || static_cast<int64_t>(m.values.size()) != count) {
      throw bad(std::to_string(m.values.size()) + " values for the shape's " +
                std::to_string(count));
    }
    out[name] = std::move(m);
  }
  return out;
}

}  // namespace

void RangeCollector::add(const std::string& value, const at::Tensor& tensor) {
  if (tensor.numel() == 0) return;
  const at::Tensor x = tensor.detach().to(at::kFloat).reshape({-1});
  const auto [mn, mx] = at::aminmax(x);
  const double lo = mn.item<double>(), hi = mx.item<double>();
  double low = lo, high = hi;
  if (hi > lo) {
    const at::Tensor counts = at::histc(x, kBins, lo, hi).to(at::kDouble);
    high = edgeAt(counts, lo, hi, percentile_ / 100.0);
    // The lower end: the same from the other side.
    low = hi - edgeAt(counts.flip({0}), 0.0, hi - lo, percentile_ / 100.0);
  }
  auto [it, fresh] = sums_.try_emplace(value);
  ActivationRange& r = it->second;
  if (fresh) {
    r.min = lo;
    r.max = hi;
  }
  r.min = std::min(r.min, lo);
  r.max = std::max(r.max, hi);
  r.low += low;
  r.high += high;
  r.images += 1;
}

ActivationRanges RangeCollector::ranges() const {
  ActivationRanges out = sums_;
  for (auto& [name, r] : out) {
    r.low /= static_cast<double>(r.images);
    r.high /= static_cast<double>(r.images);
  }
  return out;
}

std::string modelFingerprint(const std::string& model_bytes) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(model_bytes))
    throw std::invalid_argument("int8: the fp32 model could not be read as ONNX");
  std::string graph;
  proto.graph().SerializeToString(&graph);
  weights::Sha256 hash;
  hash.update(graph.data(), graph.size());
  return hash.hex();
}

void writeCalibrationCache(const std::filesystem::path& file, const CalibrationCache& cache) {
  std::ostringstream s;
  {
    io::JsonWriter j(s);
    j.beginObject();
    j.key("format").value(kFormat);
    j.key("model_fingerprint").value(cache.fingerprint);
    j.key("spec").value(cache.spec);
    j.key("weights").value(cache.weights);
    j.key("percentile").value(cache.percentile);
    j.key("images").value(cache.images);
    if (cache.fully_connected) {
      j.key("fully_connected_timing").beginObject();
      j.key("images").value(cache.fully_connected->images);
      j.key("int8_ms").value(cache.fully_connected->int8_ms);
      j.key("float_ms").value(cache.fully_connected->float_ms);
      j.endObject();
    }
    if (cache.range_choice) {
      j.key("range_choice").beginObject();
      j.key("range").value(cache.range_choice->range);
      j.key("why").value(cache.range_choice->why);
      j.endObject();
    }
    j.key("activations").beginObject();
    for (const auto& [name, r] : cache.measured.ranges) {
      j.key(name).beginObject();
      j.key("min").value(r.min);
      j.key("max").value(r.max);
      j.key("low").value(r.low);
      j.key("high").value(r.high);
      j.key("images").value(r.images);
      j.endObject();
    }
    j.endObject();
    j.key("input_means").beginObject();
    for (const auto& [weight, m] : cache.measured.input_means) {
      j.key(weight).beginObject();
      j.key("positions").value(m.positions);
      j.key("shape").beginArray();
      for (int64_t d : m.shape)
        j.value(d);
      j.endArray();
      j.key("values").beginArray();
      for (double v : m.values)
        j.value(v);
      j.endArray();
      j.endObject();
    }
    j.endObject();
    j.endObject();
  }
  io::writeFileAtomic(file, s.str() + "\n");
}

CalibrationCache readCalibrationCache(const std::filesystem::path& file) {
  const std::string where = file.string() + ": ";
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto error = parser.load(file.string()).get(doc); error != simdjson::SUCCESS) {
    throw CalibrationCacheError(where + "not a calibration cache (" +
                                simdjson::error_message(error) + ")");
  }
  const auto text = [&](const char* key) {
    std::string_view v;
    if (doc[key].get(v) != simdjson::SUCCESS)
      throw CalibrationCacheError(where + "\"" + key + "\": missing or not a string");
    return std::string(v);
  };
  if (text("format") != kFormat) {
    throw CalibrationCacheError(where + "\"format\" is \"" + text("format") + "\", not \"" +
                                kFormat + "\"");
  }
  CalibrationCache cache;
  cache.fingerprint = text("model_fingerprint");
  cache.spec = text("spec");
  cache.weights = text("weights");
  if (doc["percentile"].get(cache.percentile) != simdjson::SUCCESS ||
      doc["images"].get(cache.images) != simdjson::SUCCESS) {
    throw CalibrationCacheError(where + "\"percentile\" or \"images\": missing or not a number");
  }
  if (simdjson::dom::object timing; doc["fully_connected_timing"].get(timing) == simdjson::SUCCESS) {
    LayerTiming t;
    if (timing["images"].get(t.images) != simdjson::SUCCESS || t.images <= 0 ||
        timing["int8_ms"].get(t.int8_ms) != simdjson::SUCCESS || !(t.int8_ms > 0) ||
        timing["float_ms"].get(t.float_ms) != simdjson::SUCCESS || !(t.float_ms > 0)) {
      throw CalibrationCacheError(where +
                                  "\"fully_connected_timing\": not a timing (images, int8_ms, "
                                  "float_ms above 0)");
    }
    cache.fully_connected = t;
  }
  if (simdjson::dom::object choice; doc["range_choice"].get(choice) == simdjson::SUCCESS) {
    std::string_view range, why;
    if (choice["range"].get(range) != simdjson::SUCCESS ||
        (range != "percentile" && range != "minmax") ||
        choice["why"].get(why) != simdjson::SUCCESS) {
      throw CalibrationCacheError(where +
                                  "\"range_choice\": not a choice (range \"percentile\" or "
                                  "\"minmax\", why)");
    }
    cache.range_choice = CalibrationCache::RangeDecision{std::string(range), std::string(why)};
  }
  simdjson::dom::object activations;
  if (doc["activations"].get(activations) != simdjson::SUCCESS)
    throw CalibrationCacheError(where + "\"activations\": missing or not an object");
  for (const auto field : activations) {
    const std::string name(field.key);
    ActivationRange r;
    const auto number = [&](const char* key, double& v) {
      if (field.value[key].get(v) != simdjson::SUCCESS) {
        throw CalibrationCacheError(where + "activations \"" + name + "\": \"" + key +
                                    "\" missing or not a number");
      }
    };
    number("min", r.min);
    number("max", r.max);
    number("low", r.low);
    number("high", r.high);
    if (field.value["images"].get(r.images) != simdjson::SUCCESS || r.images <= 0 ||
        !(r.min <= r.max) || !std::isfinite(r.min) || !std::isfinite(r.max)) {
      throw CalibrationCacheError(where + "activations \"" + name +
                                  "\": not a measured range (images, min <= max)");
    }
    cache.measured.ranges[name] = r;
  }
  if (simdjson::dom::object means; doc["input_means"].get(means) == simdjson::SUCCESS)
    cache.measured.input_means = readInputMeans(means, where);
  return cache;
}

}  // namespace mrcnn::exporter
