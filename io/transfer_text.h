// A transfer's progress as people read it, one line for a terminal bar or a status line:
// "12.3 MB of 97.8 MB, 5.1 MB/s, 17 s left" (what is known of it), "97.8 MB, 5.1 MB/s, done".
// Shared by the weights download that reports it and the views that show it.
#pragma once

#include <cstdint>
#include <string>

namespace mrcnn::io {

// `total` 0 and `eta_seconds` < 0 when unknown; `done` once the whole body arrived.
std::string transferText(uint64_t bytes, uint64_t total, double bytes_per_second,
                         double eta_seconds, bool done);

}  // namespace mrcnn::io
