#include "app/headless.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "app/event_render.h"
#include "app/rank_launcher.h"
#include "app/remote_launch.h"
#include "engine/file_tasks.h"
#include "specs/spec.h"

namespace mrcnn::app {
namespace {

// Writes all of `text` to stdout (the terminal or a pipe).
void put(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stdout is gone: keep running the engine to its end
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// The spec's report_frequency (with the --set overrides) sets how often the terminal gets a
// line of the loss components; a spec that does not load keeps the default (the engine
// reports what is wrong with it).
RenderOptions renderOptions(const std::string& spec, const std::vector<std::string>& overrides) {
  RenderOptions o;
  if (!spec.empty()) {
    try {
      const spec::LoadedSpec loaded = spec::loadSpecFile(spec, overrides);
      if (loaded.spec.report_frequency() > 0)
        o.loss_every_steps = static_cast<int>(loaded.spec.report_frequency());
    } catch (const std::exception&) {
    }
  }
  o.tty = ::isatty(STDOUT_FILENO) == 1;
  winsize ws{};
  if (o.tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) o.width = ws.ws_col;
  return o;
}

// The program that runs the task: mrcnn-data for the tasks on files (engine/file_tasks.h,
// no LibTorch to load), else mrcnn-engine; each beside this executable unless MRCNN_DATA or
// MRCNN_ENGINE names it.
std::filesystem::path findProgram(const std::string& self, bool file_task) {
  const char* variable = file_task ? "MRCNN_DATA" : "MRCNN_ENGINE";
  if (const char* env = std::getenv(variable); env && *env) return env;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) exe = std::filesystem::absolute(self);
  return exe.parent_path() / (file_task ? engine::kFileTaskProgram : "mrcnn-engine");
}

constexpr const char* kUsage =
    "usage: mrcnn-workbench --headless SPEC [--task TASK] [--set path.to.field=value]... "
    "[--run-dir DIR]\n"
    "       mrcnn-workbench --headless SPEC --task evaluate [--checkpoint FILE] [--run-dir DIR]\n"
    "       mrcnn-workbench --headless SPEC --task inference --images FILE_OR_DIR [--out DIR] "
    "[--checkpoint FILE] [--backend libtorch|openvino] [--onnx MODEL.onnx] "
    "[--tile SIZE [--tile-overlap F] [--tile-full] [--tile-merge nmm|nms]] [--streams N] "
    "[--out-annotations DRAFT.json] [--no-overlays]\n"
    "       mrcnn-workbench --headless SPEC --task export [--checkpoint FILE] [--output-dir DIR] "
    "[--opset 16|17] [--gen-ds-config] [--images FILE_OR_DIR] [--data_type fp32|int8 "
    "[--cal_image_dir DIR] [--batches N] [--cal_cache_file FILE] "
    "[--cal_range auto|percentile|minmax] [--cal_percentile P] [--bias_correction on|off]]\n"
    "       mrcnn-workbench --headless SPEC --task prune --output-dir DIR [--checkpoint FILE] "
    "[--pruning-threshold T] [--normalizer max|L2] [--equalization-criterion "
    "union|intersection|arithmetic_mean|geometric_mean] [--pruning-granularity N] "
    "[--min-num-filters N] [--excluded-layers a,b,...]\n"
    "       mrcnn-workbench --headless SPEC --task benchmark [--mode train|inference] [--steps N] "
    "[--profile]\n"
    "       mrcnn-workbench --headless --task evaluate --annotations GT.json --results DT.json "
    "[--iou-type bbox|segm|both] [--metrics-out M.json]\n"
    "       mrcnn-workbench --headless --task dataset_convert --image-dir DIR --annotations F.json "
    "--output-dir DIR [--tag TAG] [--num-shards N] [--include-mask true|false]\n"
    "       mrcnn-workbench --headless --task dataset_import --input PATH --output-dir DIR "
    "[--format labelme|voc|cvat|yolo|coco] [--split train=0.8,val=0.2] [--seed N] "
    "[--labels FILE] [--copy-images]\n"
    "       mrcnn-workbench --headless [SPEC] --task dataset_stats [--annotations F.json "
    "[--annotations G.json] --output-dir DIR]\n"
    "       mrcnn-workbench --headless SPEC --task label_check [--split train|val] "
    "[--folds K [--fold-steps N]] [--output-dir DIR]\n"
    "       mrcnn-workbench --headless --task label_check --annotations GT.json --results "
    "DT.json [--output-dir DIR] [--score-threshold S] [--top N]\n"
    "data-parallel training (one engine process a rank, PyTorch's c10d: Gloo on the CPU,\n"
    "NCCL on GPUs): --nproc-per-node N [--nnodes M --node-rank R --master-addr A "
    "--master-port P]\n"
    "on a host of the hosts file ($XDG_CONFIG_HOME/mrcnn-workbench/hosts.json): --host NAME\n"
    "(the spec goes there, runs detached, is followed here and comes back into --run-dir;\n"
    "--bring-back: only the run folder as it is there now, nothing started)\n"
    "--raw-events: rank 0's JSON event lines as they are (for programs, the GUI), not rendered\n"
    "tasks: train (default), validate, evaluate, inference, dataset_convert, dataset_import, "
    "dataset_stats, label_check, benchmark, prune, export\n";

// The launcher's own options (not passed to the engine).
bool launcherOption(const std::string& name) {
  return name == "--nproc-per-node" || name == "--nnodes" || name == "--node-rank" ||
         name == "--master-addr" || name == "--master-port" || name == "--host";
}

// The engine's arguments on a host: without --spec and --run-dir (the host's own are used;
// --run-dir names the local folder the run comes back into).
std::vector<std::string> hostArgs(const std::vector<std::string>& engine_args, std::string* run_dir) {
  std::vector<std::string> out;
  for (size_t i = 0; i < engine_args.size(); ++i) {
    const std::string& a = engine_args[i];
    const bool value_next = (a == "--spec" || a == "--run-dir") && i + 1 < engine_args.size();
    if (a == "--run-dir" && value_next) *run_dir = engine_args[i + 1];
    if (a.starts_with("--run-dir=")) *run_dir = a.substr(10);
    if (value_next) {
      ++i;
      continue;
    }
    if (a.starts_with("--spec=") || a.starts_with("--run-dir=")) continue;
    out.push_back(a);
  }
  return out;
}

}  // namespace

int runHeadless(const std::vector<std::string>& args, const std::string& self) {
  std::vector<std::string> engine_args;
  bool have_spec = false;
  std::string spec_path;
  std::string task = "train";
  std::vector<std::string> overrides;
  RankLayout layout;
  bool raw_events = false;
  bool bring_back = false;
  std::string host;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--raw-events") {
      raw_events = true;
      continue;
    }
    if (a == "--bring-back") {
      bring_back = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (launcherOption(a.substr(0, a.find('=')))) {
      const std::string name = a.substr(0, a.find('='));
      std::string value;
      if (a.find('=') != std::string::npos) {
        value = a.substr(a.find('=') + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        std::cerr << "mrcnn-workbench: " << name << " needs a value\n" << kUsage;
        return 2;
      }
      if (name == "--master-addr") {
        layout.master_addr = value;
        continue;
      }
      if (name == "--host") {
        host = value;
        continue;
      }
      const int n =
          name == "--node-rank" ? (value == "0" ? 0 : parseCount(value)) : parseCount(value);
      const int port = name == "--master-port" ? std::atoi(value.c_str()) : 0;
      if ((name == "--master-port" &&
           (port < 1 || port > 65535 || std::to_string(port) != value)) ||
          (name != "--master-port" && n < 0)) {
        std::cerr << "mrcnn-workbench: " << name << " " << value
                  << ": not a valid value (a whole number"
                  << (name == "--master-port" ? ", a TCP port" : " from 1") << ")\n";
        return 2;
      }
      if (name == "--nproc-per-node") layout.nproc_per_node = n;
      if (name == "--nnodes") layout.nnodes = n;
      if (name == "--node-rank") layout.node_rank = n;
      if (name == "--master-port") layout.master_port = port;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      engine_args.push_back(a);
      // Every option but these flags takes a value, which goes along (the engine checks
      // the names).
      const bool flag = a == "--version" || a == "--gen-ds-config" || a == "--profile" ||
                        a == "--copy-images" || a == "--tile-full" || a == "--no-overlays" ||
                        a.find('=') != std::string::npos;
      if (!flag && i + 1 < args.size()) {
        engine_args.push_back(args[++i]);
        if (a == "--task") task = args[i];
        if (a == "--spec") {
          have_spec = true;
          spec_path = args[i];
        }
        if (a == "--set") overrides.push_back(args[i]);
      } else if (a.starts_with("--set=")) {
        overrides.push_back(a.substr(6));
      } else if (a.starts_with("--task=")) {
        task = a.substr(7);
      } else if (a.starts_with("--spec=")) {
        have_spec = true;
        spec_path = a.substr(7);
      }
    } else if (!have_spec) {
      engine_args.insert(engine_args.begin(), {"--spec", a});
      have_spec = true;
      spec_path = a;
    } else {
      std::cerr << "mrcnn-workbench: unexpected argument \"" << a << "\"\n" << kUsage;
      return 2;
    }
  }

  if (!host.empty()) {
    if (!have_spec || layout.distributed()) {
      std::cerr << "mrcnn-workbench: --host runs a spec on a host of the hosts file: give the "
                   "spec, and leave the process layout to the host's nproc_per_node\n";
      return 2;
    }
    HostLaunch launch;
    launch.host = host;
    launch.spec_path = spec_path;
    launch.overrides = overrides;
    launch.engine_args = hostArgs(engine_args, &launch.local_run_dir);
    launch.raw_events = raw_events;
    launch.render = renderOptions(spec_path, overrides);
    launch.bring_back_only = bring_back;
    return runOnHost(launch);
  }
  if (bring_back) {
    std::cerr << "mrcnn-workbench: --bring-back brings a run back from a host: add --host NAME\n";
    return 2;
  }
  const bool file_task = engine::isFileTask(task, have_spec) && !layout.distributed();
  const std::filesystem::path engine = findProgram(self, file_task);
  if (::access(engine.c_str(), X_OK) != 0) {
    std::cerr << "mrcnn-workbench: cannot run " << engine.string() << ": " << std::strerror(errno)
              << " (set " << (file_task ? "MRCNN_DATA" : "MRCNN_ENGINE") << " to its path)\n";
    return 1;
  }

  if (layout.node_rank >= layout.nnodes) {
    std::cerr << "mrcnn-workbench: --node-rank " << layout.node_rank << " must be below --nnodes "
              << layout.nnodes << '\n';
    return 2;
  }
  if (layout.nnodes > 1 && layout.master_port == 0) layout.master_port = 29500;
  std::vector<std::string> argv{engine.string()};
  argv.insert(argv.end(), engine_args.begin(), engine_args.end());
  std::cout.flush();
  EventRenderer renderer(renderOptions(spec_path, overrides));
  const LaunchReport report = launchRanks(argv, layout, [&](std::string_view line) {
    if (!raw_events) {
      put(renderer.line(line));
      return;
    }
    put(line);
    put("\n");
  });
  if (!raw_events) put(renderer.finish(report.exit_code));
  if (!report.failure.empty() && (layout.distributed() || report.exit_code > 128))
    std::cerr << "mrcnn-workbench: " << report.failure << '\n';
  return report.exit_code;
}

}  // namespace mrcnn::app
