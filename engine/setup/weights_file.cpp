#include "engine/setup/weights_file.h"

#include <chrono>
#include <fstream>

#include "engine/exit_codes.h"
#include "weights/resolve.h"

namespace mrcnn::engine {
namespace {

namespace fs = std::filesystem;

// A checkpoint field or option as a file: a catalogue name downloaded into the cache.
fs::path resolved(const std::string& field, const fs::path& base, TaskReport* report) {
  weights::ResolveOptions options;
  try {
    options.download = weights::DownloadOptions::fromEnvironment();
  } catch (const weights::WeightsError& e) {
    throw TaskFailure("weights_unavailable", e.what(), kExitBadData);
  }
  // A line every few seconds: the log is read by people, not plotted.
  options.download.progress_interval_s = 5;
  bool announced = false;
  if (report) {
    options.download.progress = [&](const weights::DownloadProgress& p) {
      if (!announced) {
        report->log("downloading " + field + " into " + weights::weightsCacheDir().string());
        announced = true;
      }
      report->log(field + ": " + weights::progressText(p));
    };
  }
  try {
    return weights::resolveWeights(field, base, options);
  } catch (const weights::WeightsError& e) {
    throw TaskFailure("weights_unavailable", e.what(), kExitBadData);
  }
}

}  // namespace

fs::path startingWeights(const spec::LoadedSpec& loaded, TaskReport* report) {
  if (!loaded.spec.pruned_model_path().empty()) {
    const fs::path p(loaded.spec.pruned_model_path());
    return p.is_absolute() ? p : loaded.resolved.spec_dir / p;
  }
  return resolved(loaded.spec.checkpoint(), loaded.resolved.spec_dir, report);
}

fs::path weightsFile(const fs::path& checkpoint_option, const spec::LoadedSpec& loaded,
                     const fs::path& run_dir, TaskReport* report) {
  if (!checkpoint_option.empty())
    return resolved(checkpoint_option.string(), fs::current_path(), report);
  const fs::path last = run_dir / "checkpoints" / "last";
  std::error_code ec;
  if (fs::is_regular_file(last, ec)) {
    std::ifstream in(last);
    std::string name;
    std::getline(in, name);
    if (!name.empty()) {
      const fs::path p(name);
      return p.is_absolute() ? p : run_dir / "checkpoints" / p;
    }
  }
  return startingWeights(loaded, report);
}

std::string weightsSearched(const fs::path& spec_path, const fs::path& run_dir) {
  return "no --checkpoint was given, the run directory has no " +
         (run_dir / "checkpoints" / "last").string() + " and " + spec_path.string() +
         " sets no pruned_model_path or checkpoint; give --checkpoint FILE, set the spec's "
         "checkpoint, or train in the run directory first";
}

}  // namespace mrcnn::engine
