#include "engine/harness/task_harness.h"

#include <cstdlib>
#include <memory>
#include <sstream>
#include <optional>
#include <ostream>

#include "dataset/coco/coco.h"
#include "dataset/convert/dataset_convert.h"
#include "engine/exit_codes.h"
#include "engine/train/stop_signal.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// Prints every diagnostic to `err`; std::nullopt when the spec has errors.
std::optional<spec::LoadedSpec> loadSpecReporting(const TaskOptions& options, std::ostream& err) {
  spec::LoadedSpec loaded = spec::loadSpecFile(options.spec_path, options.overrides);
  // Training data and a step count are required to train (and validate), not to run a model.
  if (options.task != "train" && options.task != "validate") loaded.dropTrainingRequirements();
  for (const auto& d : loaded.diagnostics)
    err << d.format() << '\n';
  if (!loaded.ok()) {
    const size_t count = loaded.errors().size();
    err << count << (count == 1 ? " error" : " errors") << " in " << options.spec_path.string()
        << "; nothing was run\n";
    return std::nullopt;
  }
  return loaded;
}

// The exit code and event code of what escaped a task's body.
int failEscaped(TaskReport& report, const TaskEntry& entry) {
  try {
    throw;
  } catch (const TaskFailure& e) {
    return report.fail(e.code(), e.what(), e.exitCode());
  } catch (const dataset::CocoError& e) {
    return report.fail("bad_dataset", e.what(), kExitBadData);
  } catch (const dataset::ConvertError& e) {
    return report.fail("bad_dataset", e.what(), kExitBadData);
  } catch (const std::exception& e) {
    const std::string code = entry.failure_code.empty() ? entry.name + "_failed"
                                                        : entry.failure_code;
    return report.fail(e, code, "", kExitFailed);
  }
}

}  // namespace

TestFaults testFaultsFromEnvironment() {
  TestFaults faults;
  const char* list = std::getenv("MRCNN_TEST_FAULTS");
  std::istringstream names(list ? list : "");
  for (std::string name; std::getline(names, name, ',');)
    if (name == "skip_allreduce") faults.skip_allreduce = true;
    else if (name == "skip_bn_sync") faults.skip_bn_sync = true;
  return faults;
}

fs::path runDirectory(const TaskOptions& options, const spec::LoadedSpec& loaded) {
  return options.run_dir.empty() ? loaded.resolved.output_dir / loaded.resolved.run_name
                                 : options.run_dir;
}

int runTask(const TaskEntry& entry, const TaskOptions& options, std::ostream& out,
            std::ostream& err, const std::function<int(TaskContext&)>& body) {
  std::optional<spec::LoadedSpec> loaded;
  fs::path run_dir;
  bool has_run_dir = false;
  if (entry.from_spec) {
    loaded = loadSpecReporting(options, err);
    if (!loaded) return kExitBadSpec;
    run_dir = runDirectory(options, *loaded);
    std::error_code ec;
    switch (entry.run_dir_events) {
      case RunDirEvents::Always: has_run_dir = true; break;
      case RunDirEvents::IfExists:
        has_run_dir = !options.run_dir.empty() || fs::is_directory(run_dir, ec);
        break;
      case RunDirEvents::Never: has_run_dir = false; break;
    }
    if (entry.owns_run_dir) has_run_dir = entry.owns_run_dir(run_dir);
  }

  // The events: stdout, and the run directory's events.jsonl and log.txt when it has them.
  std::unique_ptr<train::EventWriter> events;
  if (entry.events) {
    train::EventWriterOptions writer_options;
    if (entry.configure_events) entry.configure_events(writer_options, has_run_dir);
    if (!options.events_to_stdout) writer_options.stdout_fd = -1;
    if (has_run_dir) {
      std::error_code ec;
      fs::create_directories(run_dir, ec);
      if (ec) {
        err << "error: run directory: cannot create the folder " << run_dir.string() << ": "
            << ec.message() << '\n';
        return kExitBadData;
      }
      writer_options.events_file = run_dir / "events.jsonl";
    }
    if (entry.events_dir) {
      const fs::path dir = entry.events_dir(run_dir);
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) {
        err << "error: " << dir.string() << ": cannot create the folder: " << ec.message() << '\n';
        return kExitBadData;
      }
      writer_options.events_file = dir / "events.jsonl";
    }
    try {
      events = std::make_unique<train::EventWriter>(writer_options);
    } catch (const std::exception& e) {
      err << "error: " << e.what() << '\n';
      return kExitBadData;
    }
  }
  if (entry.graceful_stop) train::StopSignal::install();
  out.flush();
  TaskReport report(events.get(), out, err);
  TaskContext context{options, loaded ? &*loaded : nullptr, run_dir, has_run_dir, report};
  try {
    return body(context);
  } catch (...) {
    // An event that cannot be written any more (a full disk) fails here too: the failure
    // events still reach stdout, and stderr names the file.
    return failEscaped(report, entry);
  }
}

int runTask(const TaskEntry& entry, std::ostream& out, std::ostream& err,
            const std::function<int(TaskContext&)>& body) {
  TaskOptions options;
  options.task = entry.name;
  return runTask(entry, options, out, err, body);
}

}  // namespace mrcnn::engine
