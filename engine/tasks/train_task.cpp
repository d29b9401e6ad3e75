// The train task: the spec's Mask R-CNN trained on its dataset with evaluation on schedule,
// events on stdout and in events.jsonl, checkpoints that survive a kill, resume from the run
// directory's last checkpoint, a graceful stop on SIGINT/SIGTERM, and overlays of validation
// images at the end.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <unistd.h>

#include "dataset/coco/coco.h"
#include "engine/data_setup.h"
#include "engine/device.h"
#include "engine/exit_codes.h"
#include "engine/model_config.h"
#include "engine/tasks/task_common.h"
#include "engine/tasks/tasks.h"
#include "engine/train/checkpoint.h"
#include "engine/train/event_writer.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/run_dir.h"
#include "engine/train/solver.h"
#include "engine/train/stop_signal.h"
#include "engine/util/atomic_file.h"
#include "engine/validation.h"
#include "engine/weights.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double residentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

// Loss components summed over a reporting interval.
struct LossSums {
  double total = 0, objectness = 0, rpn_box = 0, classifier = 0, box_reg = 0, mask = 0;
  uint64_t count = 0;
  void add(const model::MaskRCNNLosses& l) {
    total += l.total.item<double>();
    objectness += l.rpn_objectness.item<double>();
    rpn_box += l.rpn_box.item<double>();
    classifier += l.classifier.item<double>();
    box_reg += l.box_reg.item<double>();
    if (l.mask.defined()) mask += l.mask.item<double>();
    ++count;
  }
};

// The first loss component that is not finite, or nullptr.
const char* nonFiniteComponent(const model::MaskRCNNLosses& l) {
  const std::pair<const char*, const at::Tensor*> parts[] = {
      {"rpn_objectness", &l.rpn_objectness}, {"rpn_box", &l.rpn_box},
      {"fast_rcnn_class", &l.classifier},    {"fast_rcnn_box", &l.box_reg},
      {"mask", &l.mask}};
  for (const auto& [name, t] : parts) {
    if (t->defined() && !std::isfinite(t->item<double>())) return name;
  }
  return nullptr;
}

train::CocoSummary summaryOf(const eval::EvalResult& r, const dataset::CocoDataset& gt) {
  train::CocoSummary s;
  s.stats.assign(r.stats.begin(), r.stats.end());
  for (size_t k = 0; k < r.category_ids.size(); ++k) {
    s.per_category_ap[r.category_ids[k]] = r.per_category_ap[k];
  }
  for (const auto& c : gt.categories()) s.category_names[c.id] = c.name;
  return s;
}

// Autocast on for the scope (bf16 on the CPU; fp16 or bf16 on CUDA).
class AutocastScope {
 public:
  AutocastScope(bool enabled, c10::DeviceType device, at::ScalarType dtype)
      : enabled_(enabled), device_(device) {
    if (!enabled_) return;
    previous_ = at::autocast::is_autocast_enabled(device_);
    previous_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::set_autocast_enabled(device_, true);
  }
  ~AutocastScope() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(device_, previous_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
  c10::DeviceType device_;
  bool previous_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

struct Trainer {
  const TaskOptions& options;
  const spec::LoadedSpec& loaded;
  train::RunDir run_dir;
  train::EventWriter& events;
  std::ostream& err;

  void log(const std::string& text) { events.write(train::logEvent(text)); }
  void warn(const std::string& code, const std::string& message, int64_t image = 0,
            int64_t annotation = 0) {
    events.write(train::warningEvent(code, message, image, annotation));
  }
  int fail(const std::string& code, const std::string& message, int exit_code, double elapsed) {
    err << "error: " << message << '\n';
    events.write(train::errorEvent(code, message, static_cast<uint32_t>(exit_code)));
    events.write(train::doneEvent("failed", message, elapsed));
    return exit_code;
  }

  int run();
};

int Trainer::run() {
  const auto started = Clock::now();
  const spec::Experiment& s = loaded.spec;
  const auto elapsed = [&] { return seconds(Clock::now() - started); };

  const RuntimeInfo runtime = runtimeInfo();
  const DeviceChoice device_choice = chooseDevice(s.device(), runtime);
  if (!device_choice.ok) {
    return fail("bad_device", options.spec_path.string() + ": device: " + device_choice.error,
                kExitBadSpec, elapsed());
  }
  const c10::Device device(device_choice.name);
  const bool amp = s.use_amp();
  const bool fp16 = amp && s.amp_dtype() == "fp16";
  if (fp16 && device.is_cpu()) {
    return fail("bad_spec",
                options.spec_path.string() +
                    ": amp_dtype: fp16 mixed precision needs a GPU; use bf16 on the CPU",
                kExitBadSpec, elapsed());
  }
  std::ostringstream info;
  info << "LibTorch " << runtime.torch_version << " (CUDA build: "
       << (runtime.cuda_built ? "yes" : "no") << ", GPUs: " << runtime.cuda_devices
       << ", CPU threads: " << runtime.cpu_threads << "); device " << device_choice.name;
  log(info.str());

  std::ostringstream data_log, data_err;
  if (s.data_config().category_labels() != "contiguous") {
    return fail("bad_spec",
                options.spec_path.string() +
                    ": data_config.category_labels: training numbers categories contiguously; "
                    "category_id is for running torchvision's COCO models (inference, evaluate)",
                kExitBadSpec, elapsed());
  }
  const std::optional<DataFiles> data = prepareData(loaded, data_log, data_err);
  if (!data_log.str().empty()) log(data_log.str());
  if (!data) return fail("bad_dataset", data_err.str(), kExitBadData, elapsed());

  std::shared_ptr<const dataset::SampleSource> train_source, val_source;
  std::shared_ptr<const dataset::CocoDataset> val_gt;
  try {
    train_source = sampleSource(loaded, *data, /*training=*/true);
    if (!data->val_json.empty()) {
      val_gt = std::make_shared<const dataset::CocoDataset>(dataset::loadCoco(data->val_json));
      val_source = std::make_shared<dataset::CocoFolderSource>(val_gt, data->val_image_dir);
    }
  } catch (const std::exception& e) {
    return fail("bad_dataset", e.what(), kExitBadData, elapsed());
  }

  // Steps.
  const uint32_t batch_size = s.train_batch_size();
  const uint32_t accumulation = std::max<uint32_t>(1, s.gradient_accumulation_steps());
  uint64_t total_steps = s.total_steps();
  if (!s.has_total_steps()) {
    const uint64_t per_epoch =
        s.num_examples_per_epoch() ? s.num_examples_per_epoch() : train_source->size();
    total_steps = std::max<uint64_t>(
        1, s.num_epochs() * per_epoch / (static_cast<uint64_t>(batch_size) * accumulation));
  }

  // The model, its weights, the optimiser: from the last checkpoint when resuming.
  at::manual_seed(s.seed());
  model::MaskRCNN net(modelOptionsFromSpec(s, loaded.resolved));
  train::CheckpointStoreOptions store_options;
  store_options.keep_last = std::max<uint32_t>(1, s.keep_checkpoint_max());
  train::CheckpointStore store(run_dir.checkpointsDir(), store_options);
  std::optional<train::Checkpoint> resume;
  try {
    resume = store.loadLatest();
  } catch (const std::exception& e) {
    return fail("bad_checkpoint", e.what(), kExitBadData, elapsed());
  }
  try {
    if (resume) {
      model::LoadOptions load;
      load.source = (store.last() ? store.last()->string() : run_dir.checkpointsDir().string());
      net->loadTorchvisionState(resume->model, load);
    } else if (!s.checkpoint().empty()) {
      fs::path file(s.checkpoint());
      if (file.is_relative()) file = loaded.resolved.spec_dir / file;
      const WeightsReport report = loadWeights(*net, file, s.skip_checkpoint_variables());
      log("weights: " + file.string() + " (" + report.kind + ", " +
          std::to_string(report.loaded) + " tensors, " + std::to_string(report.skipped.size()) +
          " skipped)");
    }
  } catch (const std::exception& e) {
    return fail("bad_checkpoint", e.what(), kExitBadData, elapsed());
  }
  net->to(device);
  net->train();

  train::Solver solver(train::Solver::trainableParameters(*net),
                       train::solverOptionsFromSpec(s));
  train::LossScalerOptions scaler_options;
  scaler_options.enabled = fp16;
  train::LossScaler scaler(scaler_options);
  const train::LrSchedule schedule = train::LrSchedule::fromSpec(loaded);
  uint64_t step = 0, epoch = 0, position = 0;
  if (resume) {
    try {
      solver.loadStateDict(resume->optimizer, "", "checkpoint");
      scaler.loadStateDict(resume->loss_scaler, "", "checkpoint");
      train::restoreRng(resume->rng);
    } catch (const std::exception& e) {
      return fail("bad_checkpoint", e.what(), kExitBadData, elapsed());
    }
    step = resume->step;
    epoch = resume->epoch;
    position = resume->data_position;
    log("resuming at step " + std::to_string(step) + " (epoch " + std::to_string(epoch) +
        ", position " + std::to_string(position) + ")");
  }

  events.write(train::startEvent("train", run_dir.specFile().string(), run_dir.root().string(),
                                 device_choice.name, 1, total_steps, step, MRCNN_VERSION));

  std::unique_ptr<Validator> validator;
  if (val_source) {
    validator = std::make_unique<Validator>(val_gt, val_source,
                                            loaderOptionsFromSpec(loaded, /*training=*/false),
                                            s.maskrcnn_config().include_mask());
  }

  const auto save = [&](std::optional<double> metric) {
    train::Checkpoint c;
    c.step = step;
    c.epoch = epoch;
    c.data_position = position;
    c.model = net->torchvisionState();
    for (auto& [k, v] : c.model) v = v.cpu();
    c.optimizer = solver.stateDict();
    c.loss_scaler = scaler.stateDict();
    c.rng = train::captureRng();
    const fs::path path = store.save(c, metric);
    const bool best = metric && store.best() && store.best()->filename() == path.filename();
    events.write(train::checkpointEvent(path.string(), step, best));
  };

  uint64_t last_saved = resume ? step : UINT64_MAX;
  std::optional<std::pair<double, double>> last_map;
  std::optional<uint64_t> last_eval_step;
  const auto evaluate = [&]() {
    last_eval_step = step;
    // An evaluation leaves the training's random stream where it was, so a run evaluated at
    // step E trains exactly as one that is not, and a resume replays the same stream whether
    // or not the evaluation is repeated.
    const train::RngState rng_before_eval = train::captureRng();
    const ValidationResult v = validator->run(*net, device);
    train::restoreRng(rng_before_eval);
    for (const auto& w : v.warnings) {
      warn(std::string(dataset::loaderWarningName(w.code)), w.message, w.image_id,
           w.annotation_id.value_or(0));
    }
    const std::string metrics = eval::metricsJson(v.report);
    const fs::path metrics_path = run_dir.evalFile(step);
    writeFileAtomic(metrics_path, metrics);
    const train::CocoSummary bbox = summaryOf(*v.report.bbox, *val_gt);
    std::optional<train::CocoSummary> segm;
    if (v.report.segm) segm = summaryOf(*v.report.segm, *val_gt);
    events.write(train::evalEvent(step, v.images, bbox, segm ? &*segm : nullptr,
                                  metrics_path.string()));
    const double bbox_ap = v.report.bbox->stats[0];
    const double segm_ap = v.report.segm ? v.report.segm->stats[0] : bbox_ap;
    last_map = {bbox_ap, segm_ap};
    if (last_saved != step) {
      save(bbox_ap);
      last_saved = step;
    } else if (store.reportMetric(step, bbox_ap)) {
      events.write(train::checkpointEvent(store.best()->string(), step, true));
    }
  };
  const auto targets_reached = [&]() {
    const double tb = s.target_bbox_map(), ts = s.target_segm_map();
    if (!last_map || (tb <= 0 && ts <= 0)) return false;
    return last_map->first >= tb && last_map->second >= ts;
  };

  dataset::Loader loader(train_source, loaderOptionsFromSpec(loaded, /*training=*/true), epoch,
                         position);
  const bool with_masks = s.maskrcnn_config().include_mask();
  const uint32_t report_every = std::max<uint32_t>(1, s.logging_frequency());
  const uint64_t save_every = s.save_checkpoints_steps();
  const uint64_t eval_every = s.num_steps_per_eval();
  const at::ScalarType amp_dtype = s.amp_dtype() == "bf16" ? at::kBFloat16 : at::kHalf;

  LossSums sums;
  uint64_t interval_images = 0;
  double interval_wait = 0;
  auto interval_start = Clock::now();
  const auto loop_start = Clock::now();
  const uint64_t first_step = step;
  std::string status = "ok";

  try {
    while (step < total_steps) {
      for (uint32_t micro = 0; micro < accumulation; ++micro) {
        const auto wait_start = Clock::now();
        std::optional<dataset::Batch> batch = loader.next();
        interval_wait += seconds(Clock::now() - wait_start);
        if (!batch) throw std::runtime_error("the training data ended");
        for (const auto& w : batch->warnings) {
          warn(std::string(dataset::loaderWarningName(w.code)), w.message, w.image_id,
               w.annotation_id.value_or(0));
        }
        model::MaskRCNNTargets targets = batchTargets(*batch, with_masks);
        for (auto& t : targets.boxes) t = t.to(device);
        for (auto& t : targets.labels) t = t.to(device);
        for (auto& t : targets.masks) t = t.to(device);
        model::MaskRCNNLosses losses;
        {
          AutocastScope autocast(amp, device.type(), amp_dtype);
          losses = net->losses(batchImages(*batch).to(device), batchSizes(*batch), targets);
        }
        if (const char* bad = nonFiniteComponent(losses)) {
          return fail("nan_loss",
                      "the " + std::string(bad) + " loss is not finite at step " +
                          std::to_string(step + 1) +
                          "; training stopped, the last good checkpoint is kept (lower "
                          "init_learning_rate or enable global_gradient_clip_ratio)",
                      kExitFailed, elapsed());
        }
        sums.add(losses);
        scaler.scaleLoss(losses.total / static_cast<double>(accumulation)).backward();
        interval_images += batch->size();
        epoch = batch->epoch;
        position = batch->position;
      }
      const double lr = schedule.at(step);
      const train::StepResult result = solver.step(lr, scaler.enabled() ? &scaler : nullptr);
      if (!result.finite && !scaler.enabled()) {
        return fail("nan_loss",
                    "the gradients are not finite at step " + std::to_string(step + 1) +
                        "; training stopped, the last good checkpoint is kept",
                    kExitFailed, elapsed());
      }
      ++step;

      if (step % report_every == 0 || step == total_steps) {
        const double interval = seconds(Clock::now() - interval_start);
        const double done_rate =
            static_cast<double>(step - first_step) / std::max(1e-9, seconds(Clock::now() - loop_start));
        train::ProgressInfo p;
        p.step = step;
        p.epoch = epoch;
        p.lr = lr;
        const double n = static_cast<double>(std::max<uint64_t>(1, sums.count));
        p.loss_total = sums.total / n;
        p.loss_rpn_objectness = sums.objectness / n;
        p.loss_rpn_box = sums.rpn_box / n;
        p.loss_fast_rcnn_class = sums.classifier / n;
        p.loss_fast_rcnn_box = sums.box_reg / n;
        p.loss_mask = sums.mask / n;
        p.images_per_second = static_cast<double>(interval_images) / std::max(1e-9, interval);
        p.data_wait_share = interval > 0 ? interval_wait / interval : 0;
        p.eta_seconds = static_cast<double>(total_steps - step) / std::max(1e-9, done_rate);
        p.rss_mib = residentMiB();
        p.skipped_steps = scaler.skippedSteps();
        p.loss_scale = scaler.enabled() ? scaler.scale() : 0;
        events.write(train::progressEvent(p));
        sums = {};
        interval_images = 0;
        interval_wait = 0;
        interval_start = Clock::now();
      }
      const bool stop = train::StopSignal::requested();
      if (validator && eval_every > 0 && step % eval_every == 0 && step < total_steps && !stop) {
        evaluate();
        if (targets_reached()) {
          log("target mAP reached at step " + std::to_string(step) + ": bbox " +
              std::to_string(last_map->first) + ", segm " + std::to_string(last_map->second));
          break;
        }
      }
      if ((save_every > 0 && step % save_every == 0 && last_saved != step) || stop) {
        if (last_saved != step) save(std::nullopt);
        last_saved = step;
      }
      if (stop) {
        status = "stopped";
        break;
      }
    }
    if (status == "ok") {
      if (validator && last_eval_step != step) evaluate();
      if (last_saved != step) save(last_map ? std::optional<double>(last_map->first) : std::nullopt);
    }
  } catch (const train::CheckpointError& e) {
    return fail("checkpoint_failed", e.what(), kExitBadData, elapsed());
  } catch (const std::exception& e) {
    return fail("training_failed", std::string("step ") + std::to_string(step + 1) + ": " + e.what(),
                kExitFailed, elapsed());
  }

  std::ostringstream summary;
  summary << "step " << step << " of " << total_steps;
  if (last_map) summary << "; bbox mAP " << last_map->first << ", segm mAP " << last_map->second;
  if (store.best()) summary << "; best checkpoint " << store.best()->string();

  if (status == "ok" && val_source && !data->val_image_dir.empty()) {
    // Overlays of the validation images with the final weights.
    TaskOptions inference_options = options;
    inference_options.run_dir = run_dir.root();
    inference_options.checkpoint = store.last().value_or(fs::path());
    InferenceOptions inference;
    inference.images = data->val_image_dir;
    inference.out = run_dir.inferenceDir();
    std::ostringstream inference_out, inference_err;
    const int code = runInference(inference_options, inference, inference_out, inference_err);
    if (code != kExitOk) {
      warn("overlays_failed", "validation overlays were not drawn: " + inference_err.str());
    } else {
      log("overlays of the validation images in " + run_dir.inferenceDir().string());
      summary << "; overlays in " << run_dir.inferenceDir().string();
    }
  }
  events.write(train::doneEvent(status, summary.str(), elapsed()));
  return kExitOk;
}

}  // namespace

int runTrain(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const std::optional<spec::LoadedSpec> maybe = loadSpecReporting(options, err);
  if (!maybe) return kExitBadSpec;
  const spec::LoadedSpec& loaded = *maybe;
  train::RunDir run_dir(runDirectory(options, loaded));
  try {
    run_dir.create();
    if (!run_dir.hasCheckpoint()) {
      // Its paths made absolute: it is read again from the run directory (resume, the GUI's
      // predictions), whose folder is not the spec's.
      spec::Experiment as_run = loaded.spec;
      spec::anchorPaths(&as_run, loaded.resolved.spec_dir);
      writeFileAtomic(run_dir.specFile(), "# " + options.spec_path.string() + ", as run\n" +
                                              spec::printResolved(as_run));
    }
  } catch (const std::exception& e) {
    err << "error: run directory: " << e.what() << '\n';
    return kExitBadData;
  }
  out.flush();
  train::StopSignal::install();
  try {
    train::EventWriterOptions writer_options;
    writer_options.events_file = run_dir.eventsFile();
    train::EventWriter events(writer_options);
    Trainer trainer{options, loaded, run_dir, events, err};
    return trainer.run();
  } catch (const std::exception& e) {
    err << "error: " << e.what() << '\n';
    return kExitFailed;
  }
}

}  // namespace mrcnn::engine
