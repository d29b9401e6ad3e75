// The train task: assembles the training loop (engine/train/trainer.h) and its hooks from
// the spec: the data, the model and its weights (from the last checkpoint when resuming), the
// solver, the process group of a data-parallel job; then overlays of the validation images.
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <ostream>
#include <sstream>

#include "dataset/coco/coco.h"
#include "engine/dist/data_parallel.h"
#include "engine/dist/launch_env.h"
#include "engine/dist/process_group.h"
#include "engine/exit_codes.h"
#include "engine/setup/data_setup.h"
#include "engine/setup/device.h"
#include "engine/setup/model_config.h"
#include "engine/setup/precision.h"
#include "engine/setup/weights.h"
#include "engine/tasks/task_common.h"
#include "engine/tasks/tasks.h"
#include "engine/train/checkpoint.h"
#include "engine/train/event_writer.h"
#include "engine/train/hooks/hooks.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/run_dir.h"
#include "engine/train/solver.h"
#include "engine/train/stop_signal.h"
#include "engine/train/tensorboard_writer.h"
#include "engine/train/trainer.h"
#include "engine/validation/validator.h"
#include "io/atomic_file.h"
#include "io/write_error.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

struct TrainTask {
  const TaskOptions& options;
  const spec::LoadedSpec& loaded;
  const dist::LaunchEnv& launch;
  train::RunDir run_dir;
  train::EventWriter& events;
  std::ostream& err;
  Clock::time_point started = Clock::now();

  double elapsed() const { return seconds(Clock::now() - started); }
  void log(const std::string& text) { events.write(train::logEvent(text)); }
  int fail(const std::string& code, const std::string& message, int exit_code) {
    err << "error: " << (launch.distributed() ? "rank " + std::to_string(launch.rank) + ": " : "")
        << message << '\n';
    writeFailureEvents(events, code, message, exit_code, elapsed(), err);
    return exit_code;
  }

  int run();
};

int TrainTask::run() {
  const spec::Experiment& s = loaded.spec;
  const RuntimeInfo runtime = runtimeInfo();
  DeviceChoice device_choice = chooseDevice(s.device(), runtime);
  if (!device_choice.ok) {
    return fail("bad_device", options.spec_path.string() + ": device: " + device_choice.error,
                kExitBadSpec);
  }
  // One GPU a rank: LOCAL_RANK's.
  if (launch.distributed() && device_choice.name.starts_with("cuda"))
    device_choice.name = "cuda:" + std::to_string(launch.local_rank);
  const c10::Device device(device_choice.name);
  std::string precision_error;
  const std::optional<Precision> precision = precisionFromSpec(s, device, &precision_error);
  if (!precision) {
    return fail("bad_spec", options.spec_path.string() + ": " + precision_error, kExitBadSpec);
  }
  const bool fp16 = precision->autocast && precision->dtype == at::kHalf;
  std::ostringstream info;
  info << "LibTorch " << runtime.torch_version
       << " (CUDA build: " << (runtime.cuda_built ? "yes" : "no")
       << ", GPUs: " << runtime.cuda_devices << ", CPU threads: " << runtime.cpu_threads
       << "); device " << device_choice.name;
  log(info.str());
  if (!precision->fallback.empty())
    events.write(train::warningEvent("precision_fallback", precision->fallback));

  // The process group first: rank 0 prepares the data (the shapes dataset is generated
  // once) while the others wait for it.
  std::unique_ptr<dist::ProcessGroup> group;
  if (launch.distributed()) {
    const auto timeout = std::chrono::seconds(std::max<uint32_t>(1, s.dist_timeout_seconds()));
    try {
      group = dist::ProcessGroup::join(launch, device, timeout);
    } catch (const std::exception& e) {
      return fail("rendezvous_failed", e.what(), kExitFailed);
    }
    log("process group: rank " + std::to_string(launch.rank) + " of " +
        std::to_string(launch.world_size) + " (" + group->backendName() + ", launcher " +
        launch.launcher + ", master " + launch.master_addr + ":" +
        std::to_string(launch.master_port) + ")");
  }
  const auto wait_for_rank0 = [&](const char* what) {
    if (group) group->barrier(what);
  };

  if (s.data_config().category_labels() != "contiguous") {
    return fail("bad_spec",
                options.spec_path.string() +
                    ": data_config.category_labels: training numbers categories contiguously; "
                    "category_id is for running torchvision's COCO models (inference, evaluate)",
                kExitBadSpec);
  }
  std::optional<DataFiles> data;
  std::ostringstream data_log, data_err;
  try {
    if (launch.rank != 0) wait_for_rank0("rank 0 preparing the data");
    data = prepareData(loaded, data_log, data_err);
    if (launch.rank == 0) wait_for_rank0("rank 0 preparing the data");
  } catch (const dist::CollectiveError& e) {
    return fail("collective_failed", e.what(), kExitFailed);
  }
  if (!data_log.str().empty()) log(data_log.str());
  if (!data) return fail("bad_dataset", data_err.str(), kExitBadData);

  std::shared_ptr<const dataset::SampleSource> train_source, val_source;
  std::shared_ptr<const dataset::CocoDataset> val_gt;
  try {
    train_source = sampleSource(loaded, *data, /*training=*/true);
    if (!data->val_json.empty()) {
      val_gt = std::make_shared<const dataset::CocoDataset>(dataset::loadCoco(data->val_json));
      val_source = std::make_shared<dataset::CocoFolderSource>(val_gt, data->val_image_dir);
    }
  } catch (const std::exception& e) {
    return fail("bad_dataset", e.what(), kExitBadData);
  }

  // Steps: train_batch_size is per rank, the global batch b x world size.
  const uint32_t batch_size = s.train_batch_size();
  const uint32_t accumulation = std::max<uint32_t>(1, s.gradient_accumulation_steps());
  const auto world = static_cast<uint64_t>(launch.world_size);
  uint64_t total_steps = s.total_steps();
  if (!s.has_total_steps()) {
    const uint64_t per_epoch =
        s.num_examples_per_epoch() ? s.num_examples_per_epoch() : train_source->size();
    total_steps = std::max<uint64_t>(
        1, s.num_epochs() * per_epoch / (uint64_t{batch_size} * accumulation * world));
  }

  // The model, its weights, the optimiser: from the last checkpoint when resuming.
  at::manual_seed(s.seed());
  model::MaskRCNNOptions model_options = modelOptionsFromSpec(s, loaded.resolved);
  if (group && !s.maskrcnn_config().freeze_bn()) {
    // Trainable batch norm over the global batch (SyncBatchNorm), as one process would.
    dist::ProcessGroup* g = group.get();
    model_options.backbone.resnet.batch_norm_reducer = [g](at::Tensor& t) {
      g->allReduceSum(t, "batch norm statistics");
    };
  }
  train::CheckpointStoreOptions store_options;
  store_options.keep_last = std::max<uint32_t>(1, s.keep_checkpoint_max());
  train::CheckpointStore store(run_dir.checkpointsDir(), store_options);
  std::optional<train::Checkpoint> resume;
  model::MaskRCNN net(nullptr);
  try {
    resume = store.loadLatest();
    if (resume) {
      // The run's own architecture (pruned or not) from its checkpoint's tensors.
      model_options.conv_widths = prunedWidths(model_options, resume->model);
      net = model::MaskRCNN(model_options);
      model::LoadOptions load;
      load.source = (store.last() ? store.last()->string() : run_dir.checkpointsDir().string());
      net->loadTorchvisionState(resume->model, load);
    } else if (const fs::path file = startingWeights(loaded); !file.empty()) {
      WeightsReport report;
      net = loadModel(model_options, file, s.skip_checkpoint_variables(), &report);
      log("weights: " + file.string() + " (" + report.kind + ", " + std::to_string(report.loaded) +
          " tensors, " + std::to_string(report.skipped.size()) + " skipped" +
          (report.pruned_widths ? ", " + std::to_string(report.pruned_widths) + " pruned layers"
                                : std::string()) +
          ")");
      if (!s.pruned_model_path().empty() && !s.checkpoint().empty())
        log("checkpoint " + s.checkpoint() +
            " not loaded: pruned_model_path gives the model and its weights");
    } else {
      net = model::MaskRCNN(model_options);
    }
  } catch (const std::exception& e) {
    return fail("bad_checkpoint", e.what(), kExitBadData);
  }
  net->to(device);
  net->train();

  train::Solver solver(train::Solver::trainableParameters(*net), train::solverOptionsFromSpec(s));
  train::LossScalerOptions scaler_options;
  scaler_options.enabled = fp16;
  train::LossScaler scaler(scaler_options);
  const train::LrSchedule schedule = train::LrSchedule::fromSpec(loaded);
  train::TrainState state;
  state.total_steps = total_steps;
  if (resume) {
    try {
      solver.loadStateDict(resume->optimizer, "", "checkpoint");
      scaler.loadStateDict(resume->loss_scaler, "", "checkpoint");
      train::restoreRng(resume->rng);
      if (launch.rank > 0 && resume->world_size == world &&
          resume->rank_rng_cpu.size() >= static_cast<size_t>(launch.rank))
        train::restoreRng({resume->rank_rng_cpu[static_cast<size_t>(launch.rank) - 1], {}});
    } catch (const std::exception& e) {
      return fail("bad_checkpoint", e.what(), kExitBadData);
    }
    state.step = state.first_step = resume->step;
    state.epoch = resume->epoch;
    state.position = resume->data_position;
    log("resuming at step " + std::to_string(state.step) + " (epoch " +
        std::to_string(state.epoch) + ", position " + std::to_string(state.position) + ")");
    if (state.step >= total_steps)
      log("step " + std::to_string(state.step) + " is the spec's last (total_steps " +
          std::to_string(total_steps) + "): nothing to train; raise total_steps to train on");
    if (resume->world_size != world) {
      events.write(train::warningEvent(
          "world_size_changed",
          "the checkpoint was written by " + std::to_string(resume->world_size) +
              " ranks and this run has " + std::to_string(world) +
              ": training goes on from the same global sample, but no longer bit for bit as "
              "an uninterrupted run"));
    }
  }

  events.write(train::startEvent("train", run_dir.specFile().string(), run_dir.root().string(),
                                 device_choice.name, static_cast<uint32_t>(world), total_steps,
                                 state.step, MRCNN_VERSION));

  std::unique_ptr<Validator> validator;
  if (val_source) {
    validator = std::make_unique<Validator>(val_gt, val_source,
                                            loaderOptionsFromSpec(loaded, /*training=*/false),
                                            s.maskrcnn_config().include_mask());
    validator->setDatasetPaths(
        fs::absolute(data->val_json).string(),
        data->val_image_dir.empty() ? std::string() : fs::absolute(data->val_image_dir).string());
    // visualize_images_summary: a few images with their detections at each evaluation
    // (eval/overlays/, and TensorBoard's images).
    if (s.visualize_images_summary()) validator->setOverlayImages(kOverlayImagesPerEvaluation);
    // Evaluated in the precision it trains in.
    validator->setPrecision(*precision);
  }
  std::unique_ptr<dist::DataParallel> parallel;
  if (group) {
    parallel = std::make_unique<dist::DataParallel>(
        *group, train::Solver::trainableParameters(*net), s.dist_bucket_mib());
  }

  dataset::LoaderOptions loader_options = loaderOptionsFromSpec(loaded, /*training=*/true);
  loader_options.shard_count = static_cast<uint32_t>(world);
  loader_options.shard_index = static_cast<uint32_t>(launch.rank);
  std::optional<dataset::Loader> loader;
  try {
    loader.emplace(train_source, loader_options, state.epoch, state.position);
  } catch (const std::exception& e) {
    return fail("bad_dataset", e.what(), kExitBadData);
  }

  train::TrainerOptions trainer_options;
  trainer_options.device = device;
  trainer_options.accumulation = accumulation;
  trainer_options.with_masks = s.maskrcnn_config().include_mask();
  trainer_options.amp = precision->autocast;
  trainer_options.amp_dtype = precision->autocast ? precision->dtype : at::kBFloat16;
  trainer_options.seed = s.seed();
  train::Trainer trainer(*net, solver, scaler, *loader, trainer_options, state);
  trainer.add(train::makeScheduleHook(schedule));
  if (parallel) {
    const model::MaskRCNNOptions& mo = net->options();
    if (std::getenv("MRCNN_TEST_SKIP_ALLREDUCE") != nullptr) parallel->skipAllReduce(true);
    trainer.add(train::makeDataParallelHook(
        *parallel, events,
        {mo.rpn.box_loss_weight, mo.roi_heads.box_loss_weight, mo.roi_heads.mask_loss_weight}));
    trainer.add(train::makeRankBalanceHook(parallel->group(), events));
  }
  trainer.add(train::makeEventsHook(events, s.logging_frequency(), scaler));
  if (validator) {
    trainer.add(train::makeEvalHook(*validator, *net, device, parallel.get(), run_dir, events,
                                    s.num_steps_per_eval()));
  }
  trainer.add(train::makeEarlyStopHook(events, s.target_bbox_map(), s.target_segm_map()));
  train::CheckpointHookOptions checkpoint_options;
  checkpoint_options.every = s.save_checkpoints_steps();
  if (resume) checkpoint_options.saved_step = resume->step;
  trainer.add(train::makeCheckpointHook(store, *net, solver, scaler, parallel.get(), events,
                                        checkpoint_options));
  trainer.add(train::makeStopHook());

  try {
    trainer.run();
  } catch (const train::TrainError& e) {
    return fail(e.code(), e.what(), e.exitCode());
  } catch (const io::DiskFullError& e) {
    return fail("disk_full", e.what(), kExitBadData);
  } catch (const train::CheckpointError& e) {
    return fail("checkpoint_failed", e.what(), kExitBadData);
  } catch (const dist::CollectiveError& e) {
    return fail("collective_failed", e.what(), kExitFailed);
  } catch (const std::exception& e) {
    return fail("training_failed",
                "step " + std::to_string(trainer.state().step + 1) + ": " + e.what(), kExitFailed);
  }
  const train::TrainState& end = trainer.state();

  std::ostringstream summary;
  summary << "step " << end.step << " of " << total_steps;
  if (store.bestMetric()) summary << "; best bbox mAP " << *store.bestMetric();
  if (store.best()) summary << "; best checkpoint " << store.best()->string();

  if (end.status == "ok" && val_source && launch.rank == 0) {
    // A finished run trained again: its weights are those its overlays were drawn with.
    if (end.step == end.first_step && fs::exists(run_dir.inferenceDir() / "results.json")) {
      log("the weights did not change: the overlays in " + run_dir.inferenceDir().string() +
          " are theirs");
      summary << "; overlays in " << run_dir.inferenceDir().string();
    } else if (!data->val_image_dir.empty()) {
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
        events.write(train::warningEvent(
            "overlays_failed", "validation overlays were not drawn: " + inference_err.str()));
      } else {
        log("overlays of the validation images in " + run_dir.inferenceDir().string());
        summary << "; overlays in " << run_dir.inferenceDir().string();
      }
    }
  }
  events.write(train::doneEvent(end.status, summary.str(), elapsed()));
  return kExitOk;
}

}  // namespace

int runTrain(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const std::optional<spec::LoadedSpec> maybe = loadSpecReporting(options, err);
  if (!maybe) return kExitBadSpec;
  const spec::LoadedSpec& loaded = *maybe;
  const dist::LaunchEnvResult launch = dist::readLaunchEnv();
  if (!launch.env) {
    err << "error: data-parallel launch environment: " << launch.error << '\n';
    return kExitUsage;
  }
  const int rank = launch.env->rank;
  train::RunDir run_dir(runDirectory(options, loaded));
  try {
    // Rank 0 alone writes the run directory; the others read its checkpoints.
    if (rank == 0) run_dir.create();
    if (rank == 0 && !run_dir.hasCheckpoint()) {
      // Its paths made absolute: it is read again from the run directory (resume, the GUI's
      // predictions), whose folder is not the spec's. It names this run directory, so that
      // `--spec RUN/spec.txt` without --run-dir is this run (not <output_dir>/spec).
      spec::Experiment as_run = loaded.spec;
      spec::anchorPaths(&as_run, loaded.resolved.spec_dir);
      const fs::path dir = fs::absolute(run_dir.root()).lexically_normal();
      const fs::path named = dir.has_filename() ? dir : dir.parent_path();
      as_run.set_output_dir(named.parent_path().string());
      as_run.set_run_name(named.filename().string());
      io::writeFileAtomic(run_dir.specFile(), "# " + options.spec_path.string() + ", as run\n" +
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
    writer_options.rank = rank;
    if (rank == 0)
      writer_options.events_file = run_dir.eventsFile();
    else
      writer_options.stdout_fd = -1;
    train::EventWriter events(writer_options);
    // Rank 0's events also become TensorBoard scalars, in <run dir>/tensorboard.
    std::unique_ptr<train::TensorBoardWriter> tensorboard;
    if (rank == 0) {
      tensorboard = std::make_unique<train::TensorBoardWriter>(run_dir.tensorboardDir());
      events.addListener([&tensorboard](const events::Event& e) { tensorboard->onEvent(e); });
    }
    TrainTask task{options, loaded, *launch.env, run_dir, events, err};
    return task.run();
  } catch (const std::exception& e) {
    // The events file cannot be opened, or an event outside the loop cannot be appended to
    // it (a full disk): the writer names the file.
    err << "error: " << e.what() << '\n';
    return exitCodeFor(e, kExitFailed);
  }
}

}  // namespace mrcnn::engine
