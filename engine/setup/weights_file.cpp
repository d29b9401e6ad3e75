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
  bool announced = false;
  if (report) {
    // With events: a download event a few times a second (the headless bar and the GUI's
    // status line draw it). Without: a line every few seconds, read by people.
    options.download.progress_interval_s = report->events() ? 0.5 : 5;
    options.download.progress = [&](const weights::DownloadProgress& p) {
      const std::string cache = weights::weightsCacheDir().string();
      if (!announced) {
        report->log("downloading " + field + " into " + cache);
        announced = true;
      }
      if (!report->events()) {
        report->log(field + ": " + weights::progressText(p));
        return;
      }
      events::Event e;
      e.set_type("download");
      events::Download* d = e.mutable_download();
      d->set_name(field);
      d->set_cache_dir(cache);
      d->set_bytes(p.bytes);
      d->set_total_bytes(p.total);
      d->set_bytes_per_second(p.bytes_per_second);
      d->set_eta_seconds(p.eta_seconds);
      d->set_done(p.done);
      report->write(std::move(e));
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
