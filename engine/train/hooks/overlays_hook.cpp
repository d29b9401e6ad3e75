// The end-of-run overlays of the validation images (hooks.h).
#include <filesystem>
#include <string>

#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

namespace fs = std::filesystem;

class OverlaysHook : public TrainHook {
 public:
  OverlaysHook(EventWriter& events, fs::path dir, DrawOverlays draw)
      : events_(events), dir_(std::move(dir)), draw_(std::move(draw)) {}

  void afterTrain(TrainState& s) override {
    if (s.status != "ok") return;
    if (s.step == s.first_step && fs::exists(dir_ / "results.json")) {
      events_.write(logEvent("the weights did not change: the overlays in " + dir_.string() +
                             " are theirs"));
      s.summary.push_back("overlays in " + dir_.string());
      return;
    }
    const std::string error = draw_();
    if (!error.empty()) {
      events_.write(warningEvent("overlays_failed", "validation overlays were not drawn: " + error));
      return;
    }
    events_.write(logEvent("overlays of the validation images in " + dir_.string()));
    s.summary.push_back("overlays in " + dir_.string());
  }

 private:
  EventWriter& events_;
  fs::path dir_;
  DrawOverlays draw_;
};

}  // namespace

std::unique_ptr<TrainHook> makeOverlaysHook(EventWriter& events, const fs::path& dir,
                                            DrawOverlays draw) {
  return std::make_unique<OverlaysHook>(events, dir, std::move(draw));
}

}  // namespace mrcnn::train
