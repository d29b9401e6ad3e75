// The fake-data benchmark (the reference scripts' use_fake_data): synthetic batches of the
// spec's image size through the spec's model, training steps (forward, backward, gradient
// all-reduce across the ranks of a data-parallel job, optimizer step) or inference, with no
// data loading at all. Reports the global images/s and the step time's percentiles.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#if defined(MRCNN_TORCH_HAS_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "engine/dist/data_parallel.h"
#include "engine/dist/launch_env.h"
#include "engine/dist/process_group.h"
#include "engine/dist/rank_times.h"
#include "engine/exit_codes.h"
#include "engine/setup/data_setup.h"
#include "engine/runtime/task_device.h"
#include "engine/setup/model_config.h"
#include "engine/runtime/precision.h"
#include "engine/setup/weights.h"
#include "engine/runtime/op_profile.h"
#include "engine/runtime/sync_counter.h"
#include "io/atomic_file.h"
#include "io/json_writer.h"
#include "engine/setup/weights_file.h"
#include "engine/tasks/tasks.h"
#include "engine/runtime/autocast_scope.h"
#include "engine/runtime/dense_graphs.h"
#include "engine/events/event_writer.h"
#include "engine/train/loss_scaler.h"
#include "engine/train/solver.h"

namespace mrcnn::engine {
namespace {

using Clock = std::chrono::steady_clock;

struct FakeBatch {
  at::Tensor images;
  model::ImageSizes sizes;
  model::MaskRCNNTargets targets;
};

// `count` images of height x width, normalised noise, each with three boxes of random classes
// and their filled-rectangle masks.
FakeBatch fakeBatch(int64_t count, int64_t height, int64_t width, int64_t classes,
                    const c10::Device& device, bool with_masks) {
  FakeBatch b;
  b.images = at::randn({count, 3, height, width}).to(device);
  b.sizes.padded = {height, width};
  for (int64_t i = 0; i < count; ++i) {
    b.sizes.images.push_back({height, width});
    std::vector<float> boxes;
    at::Tensor masks = at::zeros({3, height, width}, at::kByte);
    for (int64_t k = 0; k < 3; ++k) {
      const float x0 = static_cast<float>(width) * (0.05f + 0.25f * static_cast<float>(k));
      const float y0 = static_cast<float>(height) * (0.1f + 0.2f * static_cast<float>(k));
      const float x1 =
          std::min(static_cast<float>(width) - 1, x0 + static_cast<float>(width) * 0.3f);
      const float y1 =
          std::min(static_cast<float>(height) - 1, y0 + static_cast<float>(height) * 0.35f);
      boxes.insert(boxes.end(), {x0, y0, x1, y1});
      masks[k]
          .slice(0, static_cast<int64_t>(y0), static_cast<int64_t>(y1))
          .slice(1, static_cast<int64_t>(x0), static_cast<int64_t>(x1))
          .fill_(1);
    }
    b.targets.boxes.push_back(at::tensor(boxes).view({3, 4}).to(device));
    b.targets.labels.push_back(
        (at::arange(3, at::kLong) % std::max<int64_t>(1, classes - 1) + 1).to(device));
    if (with_masks) b.targets.masks.push_back(masks.to(device));
  }
  return b;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double peakResidentMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// The counted syncs of a step with what was run: {"device", "mode", "batch", "precision",
// "syncs": {"total", "sites": [{"count", "frames"}]}}.
void writeSyncs(const std::filesystem::path& path, const SyncCount& syncs,
                const std::string& device, const std::string& mode, int64_t batch,
                const std::string& precision) {
  std::ostringstream out;
  {
    io::JsonWriter w(out);
    w.beginObject().key("device").value(device).key("mode").value(mode).key("batch").value(batch);
    w.key("precision").value(precision).key("syncs").raw(syncs.json()).endObject();
  }
  io::writeFileAtomic(path, out.str() + "\n");
}

int benchmark(const TaskOptions& options, const BenchmarkOptions& bench,
              const spec::LoadedSpec& loaded, const dist::LaunchEnv& env, TaskReport& report) {
  const spec::Experiment& s = loaded.spec;
  train::EventWriter& events = *report.writer();
  const auto fail = [&](const std::string& code, const std::string& message, int exit_code) {
    return report.fail(code, message, exit_code);
  };
  // The spec's precision as training and inference run it: bf16 on a CPU without native bf16
  // runs in fp32 there, so the benchmark does too (it would time LibTorch's emulation).
  const TaskDevice resolved =
      resolveDevice(s, options.spec_path, env.distributed() ? env.local_rank : -1);
  const std::string& device_name = resolved.name;
  const c10::Device device = resolved.device;
  const std::optional<Precision> precision = resolved.precision;
  const bool training = bench.mode == "train";
  const uint64_t steps = bench.steps;
  const uint64_t warmup = std::max<uint64_t>(2, steps / 10);

  try {
    std::unique_ptr<dist::ProcessGroup> group;
    if (env.distributed()) {
      group = dist::ProcessGroup::join(
          env, device, std::chrono::seconds(std::max<uint32_t>(1, s.dist_timeout_seconds())));
    }
    at::manual_seed(s.seed());
    model::MaskRCNNOptions model_options = modelOptionsFromSpec(s, loaded.resolved);
    // A pruned model (--checkpoint, or the spec's pruned_model_path) runs in its architecture.
    const std::filesystem::path pruned =
        !options.checkpoint.empty()
            ? options.checkpoint
            : (s.pruned_model_path().empty() ? std::filesystem::path() : startingWeights(loaded, &report));
    if (!pruned.empty())
      model_options.conv_widths =
          prunedWidths(model_options, modelTensors(model::readStateDict(pruned)));
    if (group && training && !s.maskrcnn_config().freeze_bn()) {
      dist::ProcessGroup* g = group.get();
      model_options.backbone.resnet.batch_norm_reducer = [g](at::Tensor& t) {
        g->allReduceSum(t, "batch norm statistics");
      };
    }
    model::MaskRCNN net(model_options);
    net->to(device);
    const dataset::LoaderOptions lo = loaderOptionsFromSpec(loaded, training);
    const int64_t height =
        lo.resize_mode == dataset::ResizeMode::kFixed ? lo.image_height : lo.min_size;
    const int64_t width =
        lo.resize_mode == dataset::ResizeMode::kFixed ? lo.image_width : lo.max_size;
    const int64_t batch = training ? s.train_batch_size() : s.eval_batch_size();
    const bool masks = s.maskrcnn_config().include_mask();
    events.write(train::startEvent("benchmark", options.spec_path.string(), "", device_name,
                                   static_cast<uint32_t>(env.world_size), steps, 0, MRCNN_VERSION));
    std::ostringstream what;
    what << bench.mode << ", batch " << batch << " of " << height << "x" << width << " per rank, "
         << env.world_size << " rank(s), " << precision->name << ", " << warmup << " warm-up + "
         << steps << " timed steps";
    events.write(train::logEvent("benchmark: " + what.str()));

    FakeBatch data = fakeBatch(batch, height, width, s.data_config().num_classes(), device, masks);
    std::unique_ptr<train::Solver> solver;
    std::unique_ptr<dist::DataParallel> parallel;
    runtime::DenseGraphs graphs;
    if (training) {
      net->train();
      solver = std::make_unique<train::Solver>(train::Solver::trainableParameters(*net),
                                               train::solverOptionsFromSpec(s));
      if (group) {
        parallel = std::make_unique<dist::DataParallel>(
            *group, train::Solver::trainableParameters(*net), s.dist_bucket_mib());
        parallel->broadcastWeights();
      }
    } else {
      net->prepareForInference();
    }
    {
      runtime::DenseGraphsRequest request;
      request.wanted = s.use_cuda_graphs();
      request.device = device;
      request.inference = !training;
      request.synchronised_batch_norm =
          static_cast<bool>(model_options.backbone.resnet.batch_norm_reducer);
      graphs = runtime::useDenseGraphs(*net, std::move(request), [&events](const std::string& l) {
        events.write(train::logEvent(l));
      });
      events.write(train::logEvent(graphs.status));
    }
    if (!precision->fallback.empty())
      events.write(train::warningEvent("precision_fallback", precision->fallback));
    const bool amp = precision->autocast;
    const at::ScalarType amp_dtype = precision->dtype;
    // fp16 training scales the loss as the trainer does (its cost is part of the step).
    train::LossScalerOptions scaler_options;
    scaler_options.enabled = training && amp && amp_dtype == at::kHalf;
    train::LossScaler scaler(scaler_options);
    const auto sync = [&] {
      if (device.is_cuda()) torch::cuda::synchronize(device.index());
    };
    // After the timed steps: one under the profiler (--profile), one counting host syncs
    // (--count-syncs, on a CUDA device).
    bool counting = !bench.count_syncs.empty();
    if (counting && (!device.is_cuda() || !SyncCounter::available())) {
      events.write(train::warningEvent(
          "count_syncs", "--count-syncs " + bench.count_syncs.string() + ": " +
                             (device.is_cuda() ? "this LibTorch was built without CUDA"
                                               : "the device is " + device_name +
                                                     ": the host waits for no GPU there") +
                             "; nothing counted, nothing written"));
      counting = false;
    }
    const uint64_t timed_end = warmup + steps;
    const uint64_t profile_step = bench.profile ? timed_end : UINT64_MAX;
    const uint64_t count_step = counting ? timed_end + (bench.profile ? 1 : 0) : UINT64_MAX;
    const uint64_t all_steps = timed_end + (bench.profile ? 1 : 0) + (counting ? 1 : 0);
    std::vector<double> times;
    std::string profile;
    SyncCount syncs;
    std::optional<dist::RankTimes> rank_times;
    if (group) rank_times.emplace(*group);
    for (uint64_t i = 0; i < all_steps; ++i) {
      OpProfile profiler(i == profile_step, device.is_cuda());
      const bool timed = i >= warmup && i < timed_end;
      sync();
      SyncCounter counter(i == count_step);  // the step alone, not the synchronisations around it
      if (rank_times && timed) rank_times->stepStarted();
      const auto t0 = Clock::now();
      if (training) {
        model::MaskRCNNLosses losses;
        {
          train::AutocastScope autocast(amp, device.type(), amp_dtype);
          losses = net->losses(data.images, data.sizes, data.targets);
        }
        {
          const at::Tensor scaled = scaler.scaleLoss(losses.total);
          RECORD_USER_SCOPE("mrcnn/backward");
          scaled.backward();
        }
        if (parallel) parallel->averageGradients();
        // A real step at a learning rate too small to diverge.
        solver->step(1e-6, scaler.enabled() ? &scaler : nullptr);
      } else {
        train::AutocastScope autocast(amp, device.type(), amp_dtype);
        (void)net->detect(data.images, data.sizes);
      }
      if (group && !training) group->barrier("benchmark step");
      if (counter.active()) syncs = counter.stop();
      sync();
      if (rank_times && timed) rank_times->stepEnded();
      if (profiler.active()) profile = profiler.stop();
      if (timed) times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    double total = 0;
    for (double t : times)
      total += t;
    const double images_per_second = static_cast<double>(batch) *
                                     static_cast<double>(env.world_size) *
                                     static_cast<double>(times.size()) / std::max(1e-9, total);
    double memory = peakResidentMiB();
    std::string memory_kind = "peak RSS";
#if defined(MRCNN_TORCH_HAS_CUDA)
    if (device.is_cuda()) {
      const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
      memory =
          static_cast<double>(
              stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
                  .peak) /
          (1024.0 * 1024.0);
      memory_kind = "peak CUDA memory allocated (rank 0)";
    }
#endif
    char line[1024];
    std::snprintf(line, sizeof line,
                  "benchmark %s: %.2f images/s (global), step time p50 %.1f ms, p90 %.1f ms, "
                  "p99 %.1f ms; %s %.0f MiB",
                  bench.mode.c_str(), images_per_second, percentile(times, 0.5) * 1000,
                  percentile(times, 0.9) * 1000, percentile(times, 0.99) * 1000,
                  memory_kind.c_str(), memory);
    if (parallel) {
      char more[128];
      std::snprintf(
          more, sizeof more, "; gradient all-reduce %.1f ms per step",
          parallel->takeAllReduceSeconds() * 1000.0 / static_cast<double>(warmup + steps));
      std::strncat(line, more, sizeof line - std::strlen(line) - 1);
    }
    if (counting) {
      char more[96];
      std::snprintf(more, sizeof more, "; %zu host syncs in a step", syncs.total);
      std::strncat(line, more, sizeof line - std::strlen(line) - 1);
      writeSyncs(bench.count_syncs, syncs, device_name, bench.mode, batch, precision->name);
      events.write(train::logEvent(
          "host synchronisations in one " + bench.mode + " step: " + std::to_string(syncs.total) +
          " from " + std::to_string(syncs.sites.size()) + " call stacks, written to " +
          bench.count_syncs.string() + " (scripts/symbolize_syncs.py names their lines)"));
    }
    if (graphs.graphs) {
      const std::string more = "; " + graphs.graphs->summary();
      std::strncat(line, more.c_str(), sizeof line - std::strlen(line) - 1);
    }
    events.write(train::logEvent(line));
    if (rank_times) {
      const std::string per_rank = rank_times->gatherReport();  // every rank takes part
      if (!per_rank.empty())
        events.write(train::logEvent(
            "per step, ms (compute + data + collectives, the last with the wait for slower "
            "ranks): " +
            per_rank));
    }
    if (!profile.empty()) events.write(train::logEvent(profile));
    events.write(train::doneEvent("ok", line, report.elapsed()));
  } catch (const dist::CollectiveError& e) {
    return fail("collective_failed", e.what(), kExitFailed);
  } catch (const std::exception& e) {
    return fail("benchmark_failed", e.what(), kExitFailed);
  }
  return kExitOk;
}

}  // namespace

int runBenchmark(const TaskOptions& options, const BenchmarkOptions& bench, std::ostream& out,
                 std::ostream& err) {
  const dist::LaunchEnvResult launch = dist::readLaunchEnv();
  if (!launch.env) {
    err << "error: data-parallel launch environment: " << launch.error << '\n';
    return kExitUsage;
  }
  const dist::LaunchEnv& env = *launch.env;
  // Events on stdout only (no run directory), rank 0's alone.
  const auto entry = TaskEntry("benchmark")
                         .runDirEvents(RunDirEvents::Never)
                         .configureEvents([&](train::EventWriterOptions& o, bool&) {
                           o.rank = env.rank;
                           if (env.rank != 0) o.stdout_fd = -1;
                           o.text_log = false;
                         });
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    return benchmark(options, bench, task.spec(), env, task.report);
  });
}

}  // namespace mrcnn::engine
