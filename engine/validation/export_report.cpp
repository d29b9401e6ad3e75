#include "engine/validation/export_report.h"

#include <chrono>
#include <sstream>

#include "engine/inference/libtorch_backend.h"
#include "engine/inference/openvino_backend.h"
#include "engine/setup/backend_setup.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

struct Measured {
  BackendMeasure measure;
  BackendRun run;
};

Measured measure(InferenceBackend& backend, const std::string& name, const ParityInputs& in) {
  Measured m;
  const auto started = std::chrono::steady_clock::now();
  m.run = backend.run(in.files);
  m.measure.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  m.measure.backend = name;
  m.measure.description = backend.description();
  m.measure.precision = backend.precision();
  if (in.ground_truth) {
    eval::EvaluationReport r = evaluateBackendRun(m.run, in.root, in.image_ids, in.category_ids,
                                                  *in.ground_truth, in.with_masks);
    if (r.bbox) m.measure.report = std::move(r);
  }
  return m;
}

std::string apText(const BackendMeasure& m) {
  std::ostringstream s;
  s << m.backend << " " << m.precision << ": " << m.seconds << " s";
  if (m.report && m.report->bbox) s << ", bbox AP " << m.report->bbox->stats[0];
  if (m.report && m.report->segm) s << ", segm AP " << m.report->segm->stats[0];
  return s.str();
}

void writeStats(io::JsonWriter& j, const char* key, const std::optional<eval::EvalResult>& r) {
  if (!r) return;
  j.key(key).beginObject();
  j.key("AP").value(r->stats[0]);
  j.key("AP50").value(r->stats[1]);
  j.key("AP75").value(r->stats[2]);
  j.endObject();
}

// Each image of `ours` against the same image of `reference`: the per-image comparisons and the
// totals added to `images`, `total` and `agreed`.
void compareRuns(const BackendRun& ours, const BackendRun& reference, const fs::path& root,
                 const exporter::ParityTolerance& tolerance,
                 std::vector<exporter::ImageParity>& images, int64_t& total, int64_t& agreed) {
  for (size_t i = 0; i < reference.images.size() && i < ours.images.size(); ++i) {
    exporter::ImageParity p = exporter::compareDetections(
        ours.images[i].detections, reference.images[i].detections, tolerance);
    p.file = reference.images[i].input.path.lexically_relative(root).generic_string();
    total += p.reference;
    agreed += p.agreed;
    images.push_back(std::move(p));
  }
}

// One run's row of "runs".
void writeMeasure(io::JsonWriter& j, const BackendMeasure& m) {
  j.beginObject();
  j.key("backend").value(m.backend);
  j.key("description").value(m.description);
  j.key("precision").value(m.precision);
  j.key("seconds").value(m.seconds);
  if (m.report) {
    writeStats(j, "bbox", m.report->bbox);
    writeStats(j, "segm", m.report->segm);
  }
  j.endObject();
}

}  // namespace

ExportParity measureExportParity(const ParityInputs& inputs,
                                 const std::function<model::MaskRCNN()>& make_model,
                                 const InputOptions& input, const fs::path& onnx, bool bf16,
                                 const exporter::ParityTolerance& tolerance, TaskReport& report,
                                 const fs::path& int8_onnx) {
  ExportParity out;
  if (inputs.files.empty()) {
    out.skipped = "no images to run: give --images, or a spec with validation images";
    return out;
  }
  OpenVinoOptions ov;
  ov.onnx = onnx;
  ov.category_ids = inputs.category_ids;
  const c10::Device cpu(c10::kCPU);

  report.log("parity: " + std::to_string(inputs.files.size()) +
             " images through LibTorch and OpenVINO in fp32");
  Measured reference = [&] {
    auto backend = makeLibTorchBackend(make_model(), input, cpu, Precision{});
    return measure(*backend, "libtorch", inputs);
  }();
  Measured exported = [&] {
    auto backend = makeOpenVinoBackend(ov);
    return measure(*backend, "openvino", inputs);
  }();
  compareRuns(exported.run, reference.run, inputs.root, tolerance, out.images, out.reference,
              out.agreed);
  bool counts_ok = reference.run.images.size() == exported.run.images.size();
  for (const exporter::ImageParity& p : out.images) {
    const double slack = std::max(1.0, 0.02 * static_cast<double>(p.reference));
    counts_ok = counts_ok && std::abs(static_cast<double>(p.ours - p.reference)) <= slack;
  }
  if (out.reference == 0) {
    out.unchecked = "the engine's model gave no detection on the " +
                    std::to_string(out.images.size()) +
                    " images, so there was nothing to compare (a model that detects nothing "
                    "above test_score_thresh, or images without objects)";
  }
  const double share = out.reference == 0
                           ? 0.0
                           : static_cast<double>(out.agreed) / static_cast<double>(out.reference);
  out.passed = out.unchecked.empty() && counts_ok && share >= tolerance.share;
  out.measures.push_back(reference.measure);
  out.measures.push_back(exported.measure);
  report.log("parity: " + std::to_string(out.agreed) + " of " + std::to_string(out.reference) +
             " detections agree; " + apText(reference.measure) + "; " + apText(exported.measure));

  if (!int8_onnx.empty()) {
    Int8Parity& q = out.int8.emplace();
    OpenVinoOptions o = ov;
    o.onnx = int8_onnx;
    Measured int8 = [&] {
      auto backend = makeOpenVinoBackend(o);
      return measure(*backend, "openvino", inputs);
    }();
    compareRuns(int8.run, exported.run, inputs.root, kInt8Tolerance, q.images, q.reference,
                q.agreed);
    q.fp32 = exported.measure;
    q.int8 = int8.measure;
    report.log("int8: " + std::to_string(q.agreed) + " of " + std::to_string(q.reference) +
               " fp32 detections agree; " + apText(q.fp32) + "; " + apText(q.int8));
  }
  if (bf16) {
    Precision p;
    p.autocast = true;
    p.dtype = at::kBFloat16;
    p.name = "bf16";
    auto lt = makeLibTorchBackend(make_model(), input, cpu, p);
    out.measures.push_back(measure(*lt, "libtorch", inputs).measure);
    ov.bf16 = true;
    auto ovb = makeOpenVinoBackend(ov);
    out.measures.push_back(measure(*ovb, "openvino", inputs).measure);
    report.log("bf16: " + apText(out.measures[2]) + "; " + apText(out.measures[3]));
  }
  return out;
}

void writeInt8ParityJson(io::JsonWriter& j, const Int8Parity& q) {
  j.key("agreement").beginObject();
  j.key("reference").value(q.reference);
  j.key("agreed").value(q.agreed);
  j.key("share").value(
      q.reference == 0 ? 0.0 : static_cast<double>(q.agreed) / static_cast<double>(q.reference));
  j.key("tolerance").beginObject();
  j.key("box_relative").value(kInt8Tolerance.box_rel);
  j.key("score").value(kInt8Tolerance.score);
  j.key("mask_iou").value(kInt8Tolerance.mask_iou);
  j.endObject();
  j.key("images").beginArray();
  for (const exporter::ImageParity& p : q.images) {
    j.beginObject();
    j.key("file").value(p.file);
    j.key("detections").beginArray().value(p.ours).value(p.reference).endArray();
    j.key("agreed").value(p.agreed);
    j.endObject();
  }
  j.endArray();
  j.endObject();
  j.key("runs").beginArray();
  for (const BackendMeasure* m : {&q.fp32, &q.int8})
    writeMeasure(j, *m);
  j.endArray();
  if (q.fp32.report && q.int8.report) {
    j.key("ap_delta").beginObject();
    if (q.fp32.report->bbox && q.int8.report->bbox)
      j.key("bbox").value(q.int8.report->bbox->stats[0] - q.fp32.report->bbox->stats[0]);
    if (q.fp32.report->segm && q.int8.report->segm)
      j.key("segm").value(q.int8.report->segm->stats[0] - q.fp32.report->segm->stats[0]);
    j.endObject();
  }
}

void writeParityJson(io::JsonWriter& j, const ExportParity& parity,
                     const exporter::ParityTolerance& tolerance) {
  j.key("parity").beginObject();
  if (!parity.skipped.empty()) {
    j.key("skipped").value(parity.skipped);
    j.endObject();
    return;
  }
  j.key("passed").value(parity.passed);
  if (!parity.unchecked.empty()) j.key("unchecked").value(parity.unchecked);
  j.key("reference").value(parity.reference);
  j.key("agreed").value(parity.agreed);
  j.key("tolerance").beginObject();
  j.key("box_relative").value(tolerance.box_rel);
  j.key("score").value(tolerance.score);
  j.key("mask_iou").value(tolerance.mask_iou);
  j.key("share").value(tolerance.share);
  j.endObject();
  j.key("images").beginArray();
  for (const exporter::ImageParity& p : parity.images) {
    j.beginObject();
    j.key("file").value(p.file);
    j.key("detections").beginArray().value(p.ours).value(p.reference).endArray();
    j.key("agreed").value(p.agreed);
    j.key("max_box_diff_relative").value(p.worst_box_rel);
    j.key("max_score_diff").value(p.worst_score);
    j.key("min_mask_iou").value(p.worst_mask_iou);
    j.endObject();
  }
  j.endArray();
  j.key("runs").beginArray();
  for (const BackendMeasure& m : parity.measures)
    writeMeasure(j, m);
  j.endArray();
  j.endObject();
}

}  // namespace mrcnn::engine
