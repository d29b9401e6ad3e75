// The resident memory of this process, for progress events and benchmarks.
#pragma once

namespace mrcnn::engine {

// In MiB (0 where /proc is not available).
double processResidentMiB();

}  // namespace mrcnn::engine
