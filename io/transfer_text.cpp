#include "io/transfer_text.h"

#include "io/write_error.h"

namespace mrcnn::io {

std::string transferText(uint64_t bytes, uint64_t total, double bytes_per_second,
                         double eta_seconds, bool done) {
  std::string text = byteSize(bytes);
  if (total > 0 && !done) text += " of " + byteSize(total);
  if (bytes_per_second > 0) text += ", " + byteSize(static_cast<uint64_t>(bytes_per_second)) + "/s";
  if (done) {
    text += ", done";
  } else if (eta_seconds >= 0) {
    const auto s = static_cast<long>(eta_seconds + 0.5);
    text += ", " +
            (s >= 60 ? std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s"
                     : std::to_string(s) + " s") +
            " left";
  }
  return text;
}

}  // namespace mrcnn::io
