#include <ATen/ATen.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dist/data_parallel.h"
#include "eval/metrics_record.h"
#include "engine/train/checkpoint.h"
#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"
#include "engine/train/run_dir.h"
#include "engine/validation/validator.h"
#include "io/atomic_file.h"

namespace mrcnn::train {
namespace {

CocoSummary summaryOf(const eval::EvalResult& r, const dataset::CocoDataset& gt) {
  CocoSummary s;
  s.stats.assign(r.stats.begin(), r.stats.end());
  for (size_t k = 0; k < r.category_ids.size(); ++k)
    s.per_category_ap[r.category_ids[k]] = r.per_category_ap[k];
  for (const auto& c : gt.categories())
    s.category_names[c.id] = c.name;
  return s;
}

class EvalHook : public TrainHook {
 public:
  EvalHook(const engine::Validator& validator, model::MaskRCNNImpl& net, c10::Device device,
           dist::DataParallel* parallel, const RunDir& run_dir, EventWriter& events, uint64_t every)
      : validator_(validator),
        net_(net),
        device_(device),
        parallel_(parallel),
        run_dir_(run_dir),
        events_(events),
        every_(every) {}

  void afterStep(TrainState& s) override {
    if (every_ > 0 && s.step % every_ == 0 && s.step < s.total_steps && !s.stop_requested)
      evaluate(s);
  }

  // A resumed run whose step was evaluated before (a finished run trained again, or one
  // stopped early at its target) takes that evaluation from its record instead of running it
  // again: the hooks after an evaluation (early stop, the best checkpoint) get its numbers.
  // Without the record (the run ended before writing it) the step is evaluated as usual.
  void beforeTrain(TrainState& s) override {
    if (s.step == 0 || s.step != s.first_step) return;
    const std::optional<EvalOutcome> recorded = onRecord(s.step);
    if (!recorded) return;
    last_step_ = s.step;
    s.eval = recorded;
    std::ostringstream text;
    text << "step " << s.step << " was evaluated before (" << run_dir_.evalFile(s.step).string()
         << "): bbox AP " << recorded->bbox_ap << ", segm AP " << recorded->segm_ap
         << "; not evaluated again";
    events_.write(logEvent(text.str()));
  }

  void beforeEnd(TrainState& s) override {
    if (s.status == "ok" && last_step_ != s.step) evaluate(s);
  }

 private:
  // Rank 0's values on every rank (parallel_ set).
  std::vector<double> fromRankZero(std::vector<double> values, std::string_view what) {
    at::Tensor t = at::tensor(values, at::kDouble).to(parallel_->group().device());
    parallel_->group().broadcast(t, 0, what);
    const at::Tensor cpu = t.cpu().contiguous();
    const double* p = cpu.data_ptr<double>();
    return {p, p + values.size()};
  }

  // The evaluation of `step` on record, as rank 0 reads it (the others may not see its
  // files); every rank gets the same answer.
  std::optional<EvalOutcome> onRecord(uint64_t step) {
    const bool first = parallel_ == nullptr || parallel_->group().rank() == 0;
    std::optional<EvalOutcome> found;
    if (first) {
      // A box-only model's segm AP is its bbox AP.
      if (const auto ap = eval::readRecordedAp(run_dir_.evalFile(step)))
        found = EvalOutcome{ap->bbox, ap->segm.value_or(ap->bbox)};
    }
    if (parallel_ != nullptr) {
      const std::vector<double> v = fromRankZero(
          {found ? 1.0 : 0.0, found ? found->bbox_ap : 0.0, found ? found->segm_ap : 0.0},
          "broadcast of the evaluation on record");
      found.reset();
      if (v[0] > 0) found = EvalOutcome{v[1], v[2]};
    }
    return found;
  }

  void evaluate(TrainState& s) {
    last_step_ = s.step;
    // The training's random stream stays where it was: a run evaluated at step E trains
    // exactly as one that is not, and a resume replays the same stream either way.
    const RngState before = captureRng();
    const engine::ValidationResult v =
        validator_.run(net_, device_, parallel_ ? &parallel_->group() : nullptr);
    restoreRng(before);
    EvalOutcome outcome;
    if (v.report.bbox) {
      for (const auto& w : v.warnings) {
        events_.write(warningEvent(std::string(dataset::loaderWarningName(w.code)), w.message,
                                   w.image_id, w.annotation_id.value_or(0)));
      }
      const std::filesystem::path metrics_path = run_dir_.evalFile(s.step);
      if (events_.active()) io::writeFileAtomic(metrics_path, eval::metricsJson(v.report));
      const dataset::CocoDataset& gt = validator_.groundTruth();
      const CocoSummary bbox = summaryOf(*v.report.bbox, gt);
      std::optional<CocoSummary> segm;
      if (v.report.segm) segm = summaryOf(*v.report.segm, gt);
      events::Event e = evalEvent(s.step, v.images, bbox, segm ? &*segm : nullptr,
                                  metrics_path.string(), v.losses ? &*v.losses : nullptr);
      if (events_.active()) {
        for (const engine::ValidationOverlay& overlay : v.overlays) {
          const std::filesystem::path path = run_dir_.overlayFile(s.step, overlay.image_id);
          std::filesystem::create_directories(path.parent_path());
          io::writeFileAtomic(path, overlay.png);
          e.add_overlay_paths(path.string());
        }
      }
      events_.write(e);
      outcome.bbox_ap = v.report.bbox->stats[0];
      outcome.segm_ap = v.report.segm ? v.report.segm->stats[0] : outcome.bbox_ap;
    }
    if (parallel_ != nullptr) {
      // Rank 0 evaluated: every rank decides on the same numbers (early stop, best).
      const std::vector<double> maps =
          fromRankZero({outcome.bbox_ap, outcome.segm_ap}, "broadcast of the evaluation's mAP");
      outcome = EvalOutcome{maps[0], maps[1]};
    }
    s.eval = outcome;
  }

  const engine::Validator& validator_;
  model::MaskRCNNImpl& net_;
  c10::Device device_;
  dist::DataParallel* parallel_;
  const RunDir& run_dir_;
  EventWriter& events_;
  uint64_t every_;
  std::optional<uint64_t> last_step_;
};

}  // namespace

std::unique_ptr<TrainHook> makeEvalHook(const engine::Validator& validator,
                                        model::MaskRCNNImpl& net, c10::Device device,
                                        dist::DataParallel* parallel, const RunDir& run_dir,
                                        EventWriter& events, uint64_t every) {
  return std::make_unique<EvalHook>(validator, net, device, parallel, run_dir, events, every);
}

}  // namespace mrcnn::train
