#include "engine/train/lr_schedule.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace mrcnn::train {
namespace {

// The spec stores these as float32: take the decimal the user wrote (0.02, not
// 0.0199999995529), which is what the shortest text of the float reads back as.
double decimalOf(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf - 1, f);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

}  // namespace

LrSchedule::LrSchedule(LrScheduleOptions options) : options_(std::move(options)) {
  if (options_.learning_rate_steps.size() != options_.learning_rate_decay_levels.size()) {
    throw std::invalid_argument(
        "learning_rate_steps has " + std::to_string(options_.learning_rate_steps.size()) +
        " steps but learning_rate_decay_levels has " +
        std::to_string(options_.learning_rate_decay_levels.size()) + " levels");
  }
  for (size_t i = 1; i < options_.learning_rate_steps.size(); ++i) {
    if (options_.learning_rate_steps[i] <= options_.learning_rate_steps[i - 1])
      throw std::invalid_argument("learning_rate_steps must be ascending");
  }
}

LrSchedule LrSchedule::fromSpec(const spec::LoadedSpec& loaded) {
  const spec::Experiment& s = loaded.spec;
  LrScheduleOptions o;
  o.warmup_learning_rate = decimalOf(s.warmup_learning_rate());
  o.init_learning_rate = decimalOf(s.init_learning_rate());
  o.warmup_steps = s.warmup_steps();
  for (long long step : loaded.resolved.learning_rate_steps) {
    if (step < 0) throw std::invalid_argument("learning_rate_steps: negative step");
    o.learning_rate_steps.push_back(static_cast<uint64_t>(step));
  }
  o.learning_rate_decay_levels = loaded.resolved.learning_rate_decay_levels;
  return LrSchedule(std::move(o));
}

double LrSchedule::at(uint64_t step) const {
  const LrScheduleOptions& o = options_;
  if (step < o.warmup_steps) {
    // TAO computes this in float32 from a float32 step; double here (the difference is
    // below float32's rounding of the result).
    return o.warmup_learning_rate + static_cast<double>(step) /
                                        static_cast<double>(o.warmup_steps) *
                                        (o.init_learning_rate - o.warmup_learning_rate);
  }
  double lr = o.init_learning_rate;
  for (size_t i = 0; i < o.learning_rate_steps.size(); ++i) {
    if (step > o.learning_rate_steps[i])
      lr = o.init_learning_rate * o.learning_rate_decay_levels[i];
  }
  return lr;
}

}  // namespace mrcnn::train
