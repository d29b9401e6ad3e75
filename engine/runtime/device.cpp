#include "engine/runtime/device.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <regex>

namespace mrcnn::engine {

RuntimeInfo runtimeInfo() {
  RuntimeInfo info;
  info.torch_version = TORCH_VERSION;
#ifdef MRCNN_TORCH_HAS_CUDA
  info.cuda_built = true;
#endif
  info.cuda_devices = static_cast<int>(torch::cuda::device_count());
  info.cpu_threads = at::get_num_threads();
  return info;
}

DeviceChoice chooseDevice(const std::string& requested, const RuntimeInfo& runtime) {
  DeviceChoice choice;
  if (requested == "cpu") {
    choice.ok = true;
    choice.name = "cpu";
    return choice;
  }
  if (requested == "auto" || requested.empty()) {
    choice.ok = true;
    choice.name = runtime.cuda_devices > 0 ? "cuda:0" : "cpu";
    return choice;
  }
  static const std::regex cuda_re("cuda(?::([0-9]+))?");
  std::smatch match;
  if (!std::regex_match(requested, match, cuda_re)) {
    choice.error = "unknown device \"" + requested + "\": use auto, cpu, cuda or cuda:N";
    return choice;
  }
  const int index = match[1].matched ? std::stoi(match[1].str()) : 0;
  if (runtime.cuda_devices == 0) {
    choice.error = std::string("device \"") + requested + "\" asked for, but " +
                   (runtime.cuda_built ? "no GPU is visible on this machine"
                                       : "this LibTorch was built without CUDA") +
                   "; use device: \"auto\" or \"cpu\"";
    return choice;
  }
  if (index >= runtime.cuda_devices) {
    choice.error = "device \"" + requested + "\" asked for, but this machine has " +
                   std::to_string(runtime.cuda_devices) + " GPU(s)";
    return choice;
  }
  choice.ok = true;
  choice.name = "cuda:" + std::to_string(index);
  return choice;
}

}  // namespace mrcnn::engine
