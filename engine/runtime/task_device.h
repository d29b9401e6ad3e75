// The one place a task turns the spec's `device` and precision (use_amp, amp_dtype) into what
// it runs on: train, evaluate, inference and benchmark all resolve them here.
#pragma once

#include <c10/core/Device.h>

#include <filesystem>
#include <string>

#include "engine/runtime/device.h"
#include "engine/runtime/precision.h"
#include "specs/spec.h"

namespace mrcnn::engine {

struct TaskDevice {
  RuntimeInfo runtime;
  std::string name;  // "cpu" or "cuda:N", as the events say
  c10::Device device{c10::kCPU};
  Precision precision;
};

// The spec's device on this machine (one GPU a rank of a data-parallel job: `local_rank`'s;
// -1 outside one) and its precision there. Throws TaskFailure (kExitBadSpec, "bad_device" or
// "bad_spec") naming `spec_path` when the spec asks for what this machine cannot do.
TaskDevice resolveDevice(const spec::Experiment& spec, const std::filesystem::path& spec_path,
                         int local_rank = -1);

}  // namespace mrcnn::engine
