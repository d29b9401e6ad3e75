#include <ostream>

#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"
#include "specs/spec.h"

namespace mrcnn::engine {

int runValidate(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const spec::LoadedSpec loaded = spec::loadSpecFile(options.spec_path, options.overrides);
  for (const auto& d : loaded.diagnostics)
    err << d.format() << '\n';
  if (!loaded.ok()) {
    const auto count = loaded.errors().size();
    err << count << (count == 1 ? " error" : " errors") << " in " << options.spec_path.string()
        << '\n';
    return kExitBadSpec;
  }
  spec::Experiment resolved = loaded.spec;
  out << "# " << options.spec_path.string() << ": valid. The spec as it will run, every "
      << "field listed; '# default' marks values the file does not set.\n";
  out << spec::printResolved(resolved);
  return kExitOk;
}

}  // namespace mrcnn::engine
