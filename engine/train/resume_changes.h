// What a resumed run's spec changes against the spec it ran with (<run dir>/spec.txt), field
// by field, and which changes a run going on from its checkpoint can take. A change that can
// apply (the learning rate and its schedule, total_steps, the evaluation and checkpoint
// intervals, the targets, logging, the data's settings) takes effect from the resumed step;
// one that cannot (the model's shape, the trainable parameters, the classes) is refused,
// naming the field and how to start a new run instead. No Torch: the train task decides, the
// start event lists them (events.proto, SpecChange).
#pragma once

#include <string>
#include <vector>

#include "specs/experiment.pb.h"

namespace mrcnn::train {

struct SpecChange {
  std::string field;   // dotted path: "maskrcnn_config.nlayers"
  std::string before;  // as protobuf text prints the value ("0.02", "\"[2070, 2470]\"")
  std::string after;
};

// Every field whose value differs, defaults filled in on both sides (a field written with its
// default value is no change), in the spec's field order. Where the run folder is (output_dir,
// run_name) is not a change: the run directory is given. Paths must be anchored alike on both
// sides (spec::anchorPaths), as the spec as run is.
std::vector<SpecChange> specChanges(const spec::Experiment& before, const spec::Experiment& after);

// Why `field` cannot change in a run that goes on from its checkpoint ("the model's shape"),
// empty when it can.
std::string refusedAtResume(const std::string& field);

// The refusal as one message: the spec, each refused change with its reason, and how to go
// on instead (a new run directory; the checkpoint's weights as a start).
std::string refusalMessage(const std::string& spec_path, const std::vector<SpecChange>& refused,
                           const std::string& run_dir);

}  // namespace mrcnn::train
