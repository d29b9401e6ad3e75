#include "engine/setup/weights_file.h"

#include <fstream>

namespace mrcnn::engine {

namespace fs = std::filesystem;

fs::path startingWeights(const spec::LoadedSpec& loaded) {
  for (const std::string& name : {loaded.spec.pruned_model_path(), loaded.spec.checkpoint()}) {
    if (name.empty()) continue;
    const fs::path p(name);
    return p.is_absolute() ? p : loaded.resolved.spec_dir / p;
  }
  return {};
}

fs::path weightsFile(const fs::path& checkpoint_option, const spec::LoadedSpec& loaded,
                     const fs::path& run_dir) {
  if (!checkpoint_option.empty()) return checkpoint_option;
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
  return startingWeights(loaded);
}

std::string weightsSearched(const fs::path& spec_path, const fs::path& run_dir) {
  return "no --checkpoint was given, the run directory has no " +
         (run_dir / "checkpoints" / "last").string() + " and " + spec_path.string() +
         " sets no pruned_model_path or checkpoint; give --checkpoint FILE, set the spec's "
         "checkpoint, or train in the run directory first";
}

}  // namespace mrcnn::engine
