#include "engine/cli.h"

#include <ostream>

#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"

namespace mrcnn::engine {
namespace {

constexpr const char* kUsage =
    "usage: mrcnn-engine --spec SPEC [--task TASK] [--run-dir DIR] [--set path.to.field=value]...\n"
    "tasks: train (default), validate, evaluate, inference, dataset_convert, prune, export\n";

}  // namespace

int engineMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  TaskOptions options;
  options.task = "train";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= args.size()) {
        err << "mrcnn-engine: " << flag << " needs a value\n" << kUsage;
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return kExitOk;
    } else if (a == "--version") {
      out << "mrcnn-engine " << MRCNN_VERSION << '\n';
      return kExitOk;
    } else if (a == "--spec" || a == "--task" || a == "--run-dir" || a == "--set") {
      const std::string* v = value(a.c_str());
      if (!v) return kExitUsage;
      if (a == "--spec") options.spec_path = *v;
      if (a == "--task") options.task = *v;
      if (a == "--run-dir") options.run_dir = *v;
      if (a == "--set") options.overrides.push_back(*v);
    } else if (a.rfind("--set=", 0) == 0) {
      options.overrides.push_back(a.substr(6));
    } else {
      err << "mrcnn-engine: unknown argument \"" << a << "\"\n" << kUsage;
      return kExitUsage;
    }
  }
  if (options.spec_path.empty()) {
    err << "mrcnn-engine: --spec is required for task " << options.task << '\n' << kUsage;
    return kExitUsage;
  }
  if (options.task == "validate") return runValidate(options, out, err);
  if (options.task == "train") return runTrain(options, out, err);
  for (const char* later : {"evaluate", "inference", "dataset_convert", "prune", "export"}) {
    if (options.task == later) {
      err << "mrcnn-engine: task " << options.task << " is not part of this build yet\n";
      return kExitUsage;
    }
  }
  err << "mrcnn-engine: unknown task \"" << options.task << "\"\n" << kUsage;
  return kExitUsage;
}

}  // namespace mrcnn::engine
