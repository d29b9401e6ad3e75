// `--task validate`: the spec as it will run, every default filled in and marked, or every
// error of it (the harness prints those and exits kExitBadSpec).
#include <ostream>

#include "engine/exit_codes.h"
#include "engine/tasks/tasks.h"
#include "specs/spec.h"

namespace mrcnn::engine {

int runValidate(const TaskOptions& options, std::ostream& out, std::ostream& err) {
  const auto entry = TaskEntry("validate").runDirEvents(RunDirEvents::Never).textReport();
  return runTask(entry, options, out, err, [&](TaskContext& task) {
    spec::Experiment resolved = task.spec().spec;
    out << "# " << options.spec_path.string() << ": valid. The spec as it will run, every "
        << "field listed; '# default' marks values the file does not set.\n";
    out << spec::printResolved(resolved);
    return kExitOk;
  });
}

}  // namespace mrcnn::engine
