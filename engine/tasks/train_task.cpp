// The train task: assembles the training loop (engine/train/trainer.h) and its hooks from
// the spec: the data, the model and its weights (from the last checkpoint when resuming), the
// solver, the process group of a data-parallel job; then overlays of the validation images.
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "dataset/loader/sample_order.h"
#include "dataset/loader/sample_source.h"
#include "dataset/loader/subset_source.h"
#include "engine/dist/data_parallel.h"
#include "engine/dist/launch_env.h"
#include "engine/dist/process_group.h"
#include "engine/exit_codes.h"
#include "engine/setup/categories.h"
#include "engine/setup/data_setup.h"
#include "engine/runtime/task_device.h"
#include "engine/setup/model_config.h"
#include "engine/runtime/precision.h"
#include "engine/setup/weights.h"
#include "engine/events/task_report.h"
#include "engine/setup/data_files.h"
#include "engine/setup/weights_file.h"
#include "engine/tasks/tasks.h"
#include "engine/train/checkpoint.h"
#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/resume_changes.h"
#include "engine/train/run_dir.h"
#include "engine/train/solver.h"
#include "engine/train/stop_signal.h"
#include "engine/events/tensorboard_writer.h"
#include "engine/train/trainer.h"
#include "engine/validation/validator.h"
#include "io/atomic_file.h"
#include "io/write_error.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// What the train task assembles, builder by builder, before the loop runs. A builder that
// cannot go on throws TaskFailure; the task harness reports it.
struct TrainRun {
  TrainRun(const TaskOptions& options_, const spec::LoadedSpec& loaded_,
           const dist::LaunchEnv& launch_, const std::filesystem::path& run_dir_,
           TaskReport& report_)
      : options(options_), loaded(loaded_), launch(launch_), run_dir(run_dir_), report(report_) {}

  const TaskOptions& options;
  const spec::LoadedSpec& loaded;
  const dist::LaunchEnv& launch;
  train::RunDir run_dir;
  TaskReport& report;

  TaskDevice device;
  std::unique_ptr<dist::ProcessGroup> group;
  DataFiles data;
  std::shared_ptr<const dataset::SampleSource> train_source, val_source;
  std::shared_ptr<const dataset::CocoDataset> val_gt;
  uint64_t total_steps = 0;
  std::vector<train::SpecChange> spec_changes;  // a resumed run's, against its spec.txt
  std::vector<double> repeat_factors;  // data_config.repeat_threshold's, by training sample

  train::EventWriter& events() const { return *report.writer(); }
  void log(const std::string& text) const { report.log(text); }
  const spec::Experiment& spec() const { return loaded.spec; }
};

// The run directory (rank 0's) with the spec as run, written into a new run directory (not over a run that has checkpoints):
// its paths made absolute, since it is read again from the run directory (resume, the GUI's
// predictions), whose folder is not the spec's; it names this run directory, so that
// `--spec RUN/spec.txt` without --run-dir is this run (not <output_dir>/spec).
void writeSpecAsRun(const TrainRun& run) {
  spec::Experiment as_run = run.loaded.spec;
  spec::anchorPaths(&as_run, run.loaded.resolved.spec_dir);
  const fs::path dir = fs::absolute(run.run_dir.root()).lexically_normal();
  const fs::path named = dir.has_filename() ? dir : dir.parent_path();
  as_run.set_output_dir(named.parent_path().string());
  as_run.set_run_name(named.filename().string());
  try {
    io::writeFileAtomic(run.run_dir.specFile(), "# " + run.options.spec_path.string() +
                                                    ", as run\n" + spec::printResolved(as_run));
  } catch (const io::DiskFullError&) {
    throw;
  } catch (const std::exception& e) {
    throw TaskFailure("bad_run_dir", std::string("run directory: ") + e.what(), kExitBadData);
  }
}

void createRunDir(const TrainRun& run) {
  if (run.launch.rank != 0) return;
  try {
    run.run_dir.create();
  } catch (const std::exception& e) {
    throw TaskFailure("bad_run_dir", std::string("run directory: ") + e.what(), kExitBadData);
  }
  if (!run.run_dir.hasCheckpoint()) writeSpecAsRun(run);
}

// A resumed run whose spec differs from the one it ran with (its spec.txt, `--set` included):
// a change that cannot apply to a run going on from its checkpoint is refused before anything
// is loaded or written; the others are kept for the start event and apply from the resumed
// step (every setting is read from this spec, none from the checkpoint but the state).
void checkSpecChanges(TrainRun& run) {
  const fs::path as_run_path = run.run_dir.specFile();
  if (!run.run_dir.hasCheckpoint() || !fs::exists(as_run_path)) return;
  const spec::LoadedSpec as_run = spec::loadSpecFile(as_run_path);
  if (!as_run.ok()) {
    run.report.warn("spec_as_run_unreadable",
                    as_run.errors().front().format() +
                        " (the changes since the run's last start cannot be listed)");
    return;
  }
  spec::Experiment now = run.spec();
  spec::anchorPaths(&now, run.loaded.resolved.spec_dir);
  run.spec_changes = train::specChanges(as_run.spec, now);
  std::vector<train::SpecChange> refused;
  for (const train::SpecChange& c : run.spec_changes)
    if (!train::refusedAtResume(c.field).empty()) refused.push_back(c);
  if (!refused.empty()) {
    throw TaskFailure("spec_changed_at_resume",
                      train::refusalMessage(run.options.spec_path.string(), refused,
                                            run.run_dir.root().string()),
                      kExitBadSpec);
  }
}

// The changes taken: the spec as run until now kept as spec.before-step-N.txt, the new one
// written as spec.txt (what `--spec RUN/spec.txt` resumes with next time).
void recordSpecChanges(const TrainRun& run, uint64_t step) {
  if (run.spec_changes.empty() || run.launch.rank != 0) return;
  const std::string stem = "spec.before-step-" + std::to_string(step);
  fs::path kept = run.run_dir.root() / (stem + ".txt");
  for (int n = 2; fs::exists(kept); ++n) kept = run.run_dir.root() / (stem + "-" + std::to_string(n) + ".txt");
  // A copy, then the new one written over atomically: the other ranks may still be reading it.
  std::error_code ec;
  fs::copy_file(run.run_dir.specFile(), kept, ec);
  if (ec) {
    throw TaskFailure("bad_run_dir",
                      "run directory: cannot keep " + run.run_dir.specFile().string() + " as " +
                          kept.string() + ": " + ec.message(),
                      kExitBadData);
  }
  writeSpecAsRun(run);
  run.log("the spec as run until step " + std::to_string(step) + " is kept in " + kept.string());
}

// Where the activations sit in memory (memory_format).
std::string layoutLine(const TrainRun& run) {
  const auto layout = model::parseActivationLayout(run.spec().memory_format())
                          .value_or(model::ActivationLayout::Auto);
  return "activations: " + model::describeLayout(layout);
}

// The device, the precision and, in a data-parallel job, the process group.
void setUpDevice(TrainRun& run) {
  const dist::LaunchEnv& launch = run.launch;
  run.device =
      resolveDevice(run.spec(), run.options.spec_path, launch.distributed() ? launch.local_rank : -1);
  const RuntimeInfo& runtime = run.device.runtime;
  std::ostringstream info;
  info << "LibTorch " << runtime.torch_version
       << " (CUDA build: " << (runtime.cuda_built ? "yes" : "no")
       << ", GPUs: " << runtime.cuda_devices << ", CPU threads: " << runtime.cpu_threads
       << "); device " << run.device.name;
  run.log(info.str());
  run.log(layoutLine(run));
  if (!run.device.precision.fallback.empty())
    run.report.warn("precision_fallback", run.device.precision.fallback);
  if (!launch.distributed()) return;
  // The process group first: rank 0 prepares the data (the shapes dataset is generated
  // once) while the others wait for it.
  const auto timeout = std::chrono::seconds(std::max<uint32_t>(1, run.spec().dist_timeout_seconds()));
  try {
    run.group = dist::ProcessGroup::join(launch, run.device.device, timeout);
  } catch (const std::exception& e) {
    throw TaskFailure("rendezvous_failed", e.what(), kExitFailed);
  }
  run.log("process group: rank " + std::to_string(launch.rank) + " of " +
          std::to_string(launch.world_size) + " (" + run.group->backendName() + ", launcher " +
          launch.launcher + ", master " + launch.master_addr + ":" +
          std::to_string(launch.master_port) + ")");
}

// What the repeat factors do to the epoch, in one line for the log.
std::string repeatFactorsSummary(const std::vector<double>& factors, double threshold) {
  size_t repeated = 0;
  double most = 1;
  for (const double r : factors) {
    if (r > 1) ++repeated;
    most = std::max(most, r);
  }
  std::ostringstream line;
  line << "repeat factors (repeat_threshold " << threshold << "): " << repeated << " of "
       << factors.size() << " training images repeat, up to " << std::setprecision(3) << most
       << " times; an epoch is " << dataset::repeatedEpochSize(factors) << " images";
  return line.str();
}

// Training images without an annotation to train on. data_config.filter_empty_gt: the training
// source without them. Otherwise they train as negatives; the log says how many where the
// source tells without reading its images (a COCO json; shards would be read whole).
void handleEmptyImages(TrainRun& run) {
  const auto& d = run.spec().data_config();
  if (!d.filter_empty_gt() && !dynamic_cast<const dataset::CocoFolderSource*>(run.train_source.get()))
    return;
  std::vector<uint32_t> kept = dataset::samplesWithAnnotations(*run.train_source, d.skip_crowd_during_training());
  const size_t all = run.train_source->size();
  if (!d.filter_empty_gt()) {
    if (kept.size() < all)
      run.log(std::to_string(all - kept.size()) + " of " + std::to_string(all) +
              " training images have no annotations: they train as negatives (RPN and box "
              "classifier losses); data_config.filter_empty_gt: true leaves them out");
    return;
  }
  if (kept.empty()) {
    throw TaskFailure("bad_dataset",
                      "data_config.filter_empty_gt: none of the " + std::to_string(all) +
                          " training images has an annotation to train on" +
                          (d.skip_crowd_during_training() ? " (crowds are skipped)" : ""),
                      kExitBadData);
  }
  run.log("filter_empty_gt: " + std::to_string(all - kept.size()) + " of " + std::to_string(all) +
          " training images have no annotations and are left out; " + std::to_string(kept.size()) +
          " train");
  run.train_source = std::make_shared<dataset::SubsetSource>(run.train_source, std::move(kept));
}

// The data files (rank 0 prepares them, the others wait), the training and validation
// sources, and the number of steps.
void setUpData(TrainRun& run) {
  const spec::Experiment& s = run.spec();
  if (s.data_config().category_labels() != "contiguous") {
    throw TaskFailure("bad_spec",
                      run.options.spec_path.string() +
                          ": data_config.category_labels: training numbers categories "
                          "contiguously; category_id is for running torchvision's COCO models "
                          "(inference, evaluate)",
                      kExitBadSpec);
  }
  const auto wait_for_rank0 = [&](const char* what) {
    if (run.group) run.group->barrier(what);
  };
  std::optional<DataFiles> data;
  std::ostringstream data_log, data_err;
  try {
    if (run.launch.rank != 0) wait_for_rank0("rank 0 preparing the data");
    data = prepareData(run.loaded, data_log, data_err);
    if (run.launch.rank == 0) wait_for_rank0("rank 0 preparing the data");
  } catch (const dist::CollectiveError& e) {
    throw TaskFailure("collective_failed", e.what(), kExitFailed);
  }
  if (!data_log.str().empty()) run.log(data_log.str());
  if (!data) throw TaskFailure("bad_dataset", data_err.str(), kExitBadData);
  run.data = *data;
  try {
    run.train_source = sampleSource(run.loaded, run.data, /*training=*/true);
    if (!run.data.val_json.empty()) {
      run.val_gt =
          std::make_shared<const dataset::CocoDataset>(dataset::loadCoco(run.data.val_json));
      run.val_source =
          std::make_shared<dataset::CocoFolderSource>(run.val_gt, run.data.val_image_dir);
    }
  } catch (const std::exception& e) {
    throw TaskFailure("bad_dataset", e.what(), kExitBadData);
  }
  handleEmptyImages(run);
  if (s.data_config().repeat_threshold() > 0) {
    run.repeat_factors = dataset::repeatFactorsOf(*run.train_source, s.data_config().repeat_threshold(),
                                                  s.data_config().skip_crowd_during_training());
    run.log(repeatFactorsSummary(run.repeat_factors, s.data_config().repeat_threshold()));
  }
  // Steps: train_batch_size is per rank, the global batch b x world size.
  const uint64_t accumulation = std::max<uint32_t>(1, s.gradient_accumulation_steps());
  const auto world = static_cast<uint64_t>(run.launch.world_size);
  run.total_steps = s.total_steps();
  if (!s.has_total_steps()) {
    const uint64_t per_epoch = s.num_examples_per_epoch() ? s.num_examples_per_epoch()
                               : run.repeat_factors.empty()
                                   ? run.train_source->size()
                                   : dataset::repeatedEpochSize(run.repeat_factors);
    run.total_steps = std::max<uint64_t>(
        1, s.num_epochs() * per_epoch / (uint64_t{s.train_batch_size()} * accumulation * world));
  }
}

// The model with its weights: the run's last checkpoint when resuming, else the spec's
// starting weights, else initial values.
model::MaskRCNN buildModel(const TrainRun& run, train::CheckpointStore& store,
                           std::optional<train::Checkpoint>& resume) {
  const spec::Experiment& s = run.spec();
  at::manual_seed(s.seed());
  model::MaskRCNNOptions model_options = modelOptionsFromSpec(s, run.loaded.resolved);
  if (run.group && !s.maskrcnn_config().freeze_bn() && !run.options.test_faults.skip_bn_sync) {
    // Trainable batch norm over the global batch (SyncBatchNorm), as one process would.
    dist::ProcessGroup* g = run.group.get();
    model_options.backbone.resnet.batch_norm_reducer = [g](at::Tensor& t) {
      g->allReduceSum(t, "batch norm statistics");
    };
  }
  try {
    resume = store.loadLatest();
    if (resume) {
      // The run's own architecture (pruned or not) from its checkpoint's tensors.
      model_options.conv_widths = prunedWidths(model_options, resume->model);
      model::MaskRCNN net(model_options);
      model::LoadOptions load;
      load.source =
          (store.last() ? store.last()->string() : run.run_dir.checkpointsDir().string());
      net->loadTorchvisionState(resume->model, load);
      return net;
    }
    if (const fs::path file = startingWeights(run.loaded, &run.report); !file.empty()) {
      // Fine-tuning: a predictor of another class count starts anew, with the rows of the
      // classes COCO also has copied from COCO's where the file is COCO's.
      WeightsOptions weights_options;
      weights_options.skip = s.skip_checkpoint_variables();
      for (const Category& c :
           categoryTable(run.data.val_json.empty() ? run.data.train_json : run.data.val_json,
                         s.data_config().num_classes(),
                         s.data_config().category_labels() == "category_id"))
        weights_options.class_names.push_back(c.name);
      WeightsReport report;
      model::MaskRCNN net = loadModel(model_options, file, weights_options, &report);
      run.log("weights: " + report.summary(file.string()));
      for (const WeightsWarning& w : report.warnings)
        run.report.warn(w.code, w.message);
      if (!s.pruned_model_path().empty() && !s.checkpoint().empty())
        run.log("checkpoint " + s.checkpoint() +
                " not loaded: pruned_model_path gives the model and its weights");
      return net;
    }
    return model::MaskRCNN(model_options);
  } catch (const TaskFailure&) {
    throw;
  } catch (const std::exception& e) {
    throw TaskFailure("bad_checkpoint", e.what(), kExitBadData);
  }
}

// The optimiser's, the loss scaler's and the generators' state of the checkpoint resumed
// from, and where the loop goes on.
void resumeState(const TrainRun& run, const train::Checkpoint& resume, train::Solver& solver,
                 train::LossScaler& scaler, train::TrainState& state) {
  const auto world = static_cast<uint64_t>(run.launch.world_size);
  const int rank = run.launch.rank;
  try {
    solver.loadStateDict(resume.optimizer, "", "checkpoint");
    scaler.loadStateDict(resume.loss_scaler, "", "checkpoint");
    train::restoreRng(resume.rng);
    if (rank > 0 && resume.world_size == world &&
        resume.rank_rng_cpu.size() >= static_cast<size_t>(rank))
      train::restoreRng({resume.rank_rng_cpu[static_cast<size_t>(rank) - 1], {}});
  } catch (const std::exception& e) {
    throw TaskFailure("bad_checkpoint", e.what(), kExitBadData);
  }
  state.step = state.first_step = resume.step;
  state.epoch = resume.epoch;
  state.position = resume.data_position;
  run.log("resuming at step " + std::to_string(state.step) + " (epoch " +
          std::to_string(state.epoch) + ", position " + std::to_string(state.position) + ")");
  if (state.step >= run.total_steps)
    run.log("step " + std::to_string(state.step) + " is the spec's last (total_steps " +
            std::to_string(run.total_steps) + "): nothing to train; raise total_steps to train on");
  if (resume.world_size != world) {
    run.report.warn("world_size_changed",
                    "the checkpoint was written by " + std::to_string(resume.world_size) +
                        " ranks and this run has " + std::to_string(world) +
                        ": training goes on from the same global sample, but no longer bit for "
                        "bit as an uninterrupted run");
  }
}

// The evaluation of the validation set, in the precision it trains in; null without one.
std::unique_ptr<Validator> buildValidator(const TrainRun& run) {
  if (!run.val_source) return nullptr;
  const spec::Experiment& s = run.spec();
  auto validator = std::make_unique<Validator>(
      run.val_gt, run.val_source, loaderOptionsFromSpec(run.loaded, /*training=*/false),
      s.maskrcnn_config().include_mask());
  validator->setDatasetPaths(fs::absolute(run.data.val_json).string(),
                             run.data.val_image_dir.empty()
                                 ? std::string()
                                 : fs::absolute(run.data.val_image_dir).string());
  // visualize_images_summary: a few images with their detections at each evaluation
  // (eval/overlays/, and TensorBoard's images).
  if (s.visualize_images_summary()) validator->setOverlayImages(kOverlayImagesPerEvaluation);
  validator->setPrecision(run.device.precision);
  // data_config.tile_size: large validation images evaluated in tiles, as `--task evaluate`
  // runs them with the spec's tile fields.
  if (const TileOptions tiles = tileOptionsFromSpec(s); tiles.size > 0) {
    validator->setTiles(tiles, inputOptionsFromSpec(s, run.loaded.resolved));
    run.log("evaluation in tiles of " + std::to_string(tiles.size) + " px (data_config.tile_size), "
            "overlap " + std::to_string(tiles.overlap).substr(0, 4) + ", " +
            (tiles.merge == TileMerge::kNmm ? "nmm" : "nms") + " merge" +
            (tiles.full_image ? ", with the whole image" : "") +
            ": no validation losses or overlays");
  }
  return validator;
}

// Overlays of the validation images drawn with the run's final checkpoint, by the inference
// task reporting as text (the train task's own events say what matters).
train::DrawOverlays overlaysDrawer(const TrainRun& run, const train::CheckpointStore& store) {
  return [&run, &store]() -> std::string {
    TaskOptions inference_options = run.options;
    inference_options.task = "inference";
    inference_options.run_dir = run.run_dir.root();
    inference_options.checkpoint = store.last().value_or(fs::path());
    InferenceOptions inference;  // no --images: the spec's validation images
    inference.out = run.run_dir.inferenceDir();
    std::ostringstream inference_out, inference_err;
    const int code = runInference(inference_options, inference, inference_out, inference_err);
    return code == kExitOk ? std::string() : inference_err.str();
  };
}

int train(TrainRun& run) {
  const spec::Experiment& s = run.spec();
  train::EventWriter& events = run.events();
  checkSpecChanges(run);  // before the process group, the data and the model
  setUpDevice(run);
  setUpData(run);
  const uint64_t world = static_cast<uint64_t>(run.launch.world_size);

  train::CheckpointStoreOptions store_options;
  store_options.keep_last = std::max<uint32_t>(1, s.keep_checkpoint_max());
  train::CheckpointStore store(run.run_dir.checkpointsDir(), store_options);
  std::optional<train::Checkpoint> resume;
  model::MaskRCNN net = buildModel(run, store, resume);
  net->to(run.device.device);
  net->train();

  const Precision& precision = run.device.precision;
  train::Solver solver(train::Solver::trainableParameters(*net), train::solverOptionsFromSpec(s));
  train::LossScalerOptions scaler_options;
  scaler_options.enabled = precision.autocast && precision.dtype == at::kHalf;
  train::LossScaler scaler(scaler_options);
  const train::LrSchedule schedule = train::LrSchedule::fromSpec(run.loaded);
  train::TrainState state;
  state.total_steps = run.total_steps;
  if (resume) {
    resumeState(run, *resume, solver, scaler, state);
    recordSpecChanges(run, state.step);
  }

  events::Event start = train::startEvent("train", run.run_dir.specFile().string(),
                                          run.run_dir.root().string(), run.device.name,
                                          static_cast<uint32_t>(world), run.total_steps,
                                          state.step, MRCNN_VERSION);
  for (const train::SpecChange& c : run.spec_changes) {
    events::SpecChange* change = start.add_spec_changes();
    change->set_field(c.field);
    change->set_before(c.before);
    change->set_after(c.after);
  }
  events.write(std::move(start));

  const std::unique_ptr<Validator> validator = buildValidator(run);
  std::unique_ptr<dist::DataParallel> parallel;
  if (run.group) {
    parallel = std::make_unique<dist::DataParallel>(
        *run.group, train::Solver::trainableParameters(*net), s.dist_bucket_mib());
  }
  dataset::LoaderOptions loader_options = loaderOptionsFromSpec(run.loaded, /*training=*/true);
  loader_options.shard_count = static_cast<uint32_t>(world);
  loader_options.repeat_factors = run.repeat_factors;
  loader_options.shard_index = static_cast<uint32_t>(run.launch.rank);
  std::optional<dataset::Loader> loader;
  try {
    loader.emplace(run.train_source, loader_options, state.epoch, state.position);
  } catch (const std::exception& e) {
    throw TaskFailure("bad_dataset", e.what(), kExitBadData);
  }

  train::TrainerOptions trainer_options;
  trainer_options.device = run.device.device;
  trainer_options.accumulation = std::max<uint32_t>(1, s.gradient_accumulation_steps());
  trainer_options.with_masks = s.maskrcnn_config().include_mask();
  trainer_options.amp = precision.autocast;
  trainer_options.amp_dtype = precision.autocast ? precision.dtype : at::kBFloat16;
  trainer_options.seed = s.seed();
  train::Trainer trainer(*net, solver, scaler, *loader, trainer_options, state);
  runtime::DenseGraphsRequest graphs;
  graphs.wanted = s.use_cuda_graphs();
  graphs.device = run.device.device;
  graphs.synchronised_batch_norm = static_cast<bool>(net->options().backbone.resnet.batch_norm_reducer);
  trainer.add(train::makeDenseGraphsHook(*net, std::move(graphs), events));
  trainer.add(train::makeScheduleHook(schedule));
  if (parallel) {
    const model::MaskRCNNOptions& mo = net->options();
    parallel->skipAllReduce(run.options.test_faults.skip_allreduce);
    trainer.add(train::makeDataParallelHook(
        *parallel, events,
        {mo.rpn.box_loss_weight, mo.roi_heads.box_loss_weight, mo.roi_heads.mask_loss_weight}));
    trainer.add(train::makeRankBalanceHook(parallel->group(), events));
  }
  trainer.add(train::makeEventsHook(events, s.logging_frequency(), scaler));
  if (validator) {
    trainer.add(train::makeEvalHook(*validator, *net, run.device.device, parallel.get(),
                                    run.run_dir, events, s.num_steps_per_eval()));
  }
  trainer.add(train::makeEarlyStopHook(events, s.target_bbox_map(), s.target_segm_map()));
  train::CheckpointHookOptions checkpoint_options;
  checkpoint_options.every = s.save_checkpoints_steps();
  if (resume) checkpoint_options.saved_step = resume->step;
  trainer.add(train::makeCheckpointHook(store, *net, solver, scaler, parallel.get(), events,
                                        checkpoint_options));
  trainer.add(train::makeStopHook());
  if (run.val_source && run.launch.rank == 0 && !run.data.val_image_dir.empty())
    trainer.add(train::makeOverlaysHook(events, run.run_dir.inferenceDir(),
                                        overlaysDrawer(run, store)));

  try {
    trainer.run();
  } catch (const TaskFailure&) {
    throw;  // a failure with its code (train::TrainError): as it is
  } catch (const io::DiskFullError&) {
    throw;
  } catch (const train::CheckpointError& e) {
    throw TaskFailure("checkpoint_failed", e.what(), kExitBadData);
  } catch (const dist::CollectiveError& e) {
    throw TaskFailure("collective_failed", e.what(), kExitFailed);
  } catch (const std::exception& e) {
    throw TaskFailure("training_failed",
                      "step " + std::to_string(trainer.state().step + 1) + ": " + e.what(),
                      kExitFailed);
  }
  const train::TrainState& end = trainer.state();
  std::ostringstream summary;
  summary << "step " << end.step << " of " << run.total_steps;
  if (store.bestMetric()) summary << "; best bbox mAP " << *store.bestMetric();
  if (store.best()) summary << "; best checkpoint " << store.best()->string();
  for (const std::string& note : end.summary)
    summary << "; " << note;
  events.write(train::doneEvent(end.status, summary.str(), run.report.elapsed()));
  return kExitOk;
}

}  // namespace

int runTrain(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const dist::LaunchEnvResult launch = dist::readLaunchEnv();
  if (!launch.env) {
    err << "error: data-parallel launch environment: " << launch.error << '\n';
    return kExitUsage;
  }
  const int rank = launch.env->rank;
  // Rank 0 alone writes the run directory (its events, TensorBoard's files, the spec as run);
  // the others read its checkpoints.
  const auto entry = TaskEntry("train")
                         .gracefulStop()
                         .failureCode("training_failed")
                         .configureEvents([rank](train::EventWriterOptions& o, bool& owns_run_dir) {
                           o.rank = rank;
                           if (rank != 0) {
                             o.stdout_fd = -1;
                             owns_run_dir = false;
                           }
                         });
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    if (launch.env->distributed()) task.report.setErrorPrefix("rank " + std::to_string(rank) + ": ");
    TrainRun run(options, task.spec(), *launch.env, task.run_dir, task.report);
    if (rank == 0) {
      // Rank 0's events also become TensorBoard scalars, in <run dir>/tensorboard (the
      // writer outlives this body: the harness may still report a failure through it).
      auto tensorboard = std::make_shared<train::TensorBoardWriter>(run.run_dir.tensorboardDir());
      task.report.writer()->addListener(
          [tensorboard](const events::Event& e) { tensorboard->onEvent(e); });
    }
    createRunDir(run);
    return train(run);
  });
}

}  // namespace mrcnn::engine
