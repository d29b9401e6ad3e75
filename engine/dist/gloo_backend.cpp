// The one file that includes ProcessGroupGloo.hpp (and so gloo's headers, from Debian's
// libgloo-dev, for compiling only). Gloo objects are only created and handed over through
// shared_ptr here: their layout in the gloo inside libtorch_cpu differs from those headers.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>

#include "engine/dist/backends.h"

namespace mrcnn::dist {

c10::intrusive_ptr<c10d::Backend> makeGlooBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout,
                                                  const std::string& host) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  } else if (!host.empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

}  // namespace mrcnn::dist
