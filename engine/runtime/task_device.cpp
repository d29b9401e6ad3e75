#include "engine/runtime/task_device.h"

#include <optional>

#include "engine/exit_codes.h"

namespace mrcnn::engine {

TaskDevice resolveDevice(const spec::Experiment& spec, const std::filesystem::path& spec_path,
                         int local_rank) {
  TaskDevice d;
  d.runtime = runtimeInfo();
  const DeviceChoice choice = chooseDevice(spec.device(), d.runtime);
  if (!choice.ok)
    throw TaskFailure("bad_device", spec_path.string() + ": device: " + choice.error, kExitBadSpec);
  d.name = choice.name;
  if (local_rank >= 0 && d.name.starts_with("cuda")) d.name = "cuda:" + std::to_string(local_rank);
  d.device = c10::Device(d.name);
  std::string error;
  const std::optional<Precision> precision = precisionFromSpec(spec, d.device, &error);
  if (!precision) throw TaskFailure("bad_spec", spec_path.string() + ": " + error, kExitBadSpec);
  d.precision = *precision;
  return d;
}

}  // namespace mrcnn::engine
