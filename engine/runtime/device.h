// Which device a run uses: the spec's `device` resolved against what this machine has.
#pragma once

#include <string>

namespace mrcnn::engine {

struct DeviceChoice {
  bool ok = false;
  std::string name;   // "cpu" or "cuda:N"
  std::string error;  // why the requested device cannot be used
};

struct RuntimeInfo {
  std::string torch_version;
  bool cuda_built = false;  // LibTorch was built with CUDA
  int cuda_devices = 0;     // GPUs visible now
  int cpu_threads = 0;
};

RuntimeInfo runtimeInfo();

// "auto" takes the first GPU when there is one, else the CPU; "cuda" and "cuda:N" fail
// with a reason where no such GPU exists.
DeviceChoice chooseDevice(const std::string& requested, const RuntimeInfo& runtime);

}  // namespace mrcnn::engine
