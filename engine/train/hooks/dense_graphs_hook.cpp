#include <utility>

#include "engine/events/event_writer.h"
#include "engine/train/hooks/hooks.h"

namespace mrcnn::train {
namespace {

class DenseGraphsHook : public TrainHook {
 public:
  DenseGraphsHook(model::MaskRCNNImpl& net, runtime::DenseGraphsRequest request,
                  EventWriter& events)
      : net_(net), request_(std::move(request)), events_(events) {}

  void beforeTrain(TrainState&) override {
    EventWriter* events = &events_;
    graphs_ = runtime::useDenseGraphs(net_, std::move(request_),
                             [events](const std::string& line) { events->write(logEvent(line)); });
    events_.write(logEvent(graphs_.status));
  }

  void afterTrain(TrainState& s) override {
    if (!graphs_.graphs) return;
    s.summary.push_back(graphs_.graphs->summary());
    net_.setDenseRunner({});  // the recordings' memory back before the overlays' inference
    graphs_.graphs.reset();
  }

 private:
  model::MaskRCNNImpl& net_;
  runtime::DenseGraphsRequest request_;
  EventWriter& events_;
  runtime::DenseGraphs graphs_;
};

}  // namespace

std::unique_ptr<TrainHook> makeDenseGraphsHook(model::MaskRCNNImpl& net,
                                               runtime::DenseGraphsRequest request,
                                               EventWriter& events) {
  return std::make_unique<DenseGraphsHook>(net, std::move(request), events);
}

}  // namespace mrcnn::train
