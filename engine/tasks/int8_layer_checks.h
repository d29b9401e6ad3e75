// What the int8 export decides by running its candidates through OpenVINO on the machine that
// exports (engine/tasks/export_int8.h calls these after building the QDQ model):
// - the layers that read a quantised layer's output directly run in int8 only where that keeps
//   the fp32 model's detections (checked on the first calibration images);
// - the fully connected layers run in int8 only where that is faster than float on this CPU
//   (timed on the first calibration images), as TensorRT's builder times a layer's tactics on
//   the card it builds for: without VNNI (AVX2) OpenVINO's int8 matrix product plus the
//   quantisation of its wide input is slower than float, with VNNI or AMX it is faster.
// - the activation ranges (each tensor's min/max or its percentile range), where the user left
//   the choice to the export (--cal_range auto): the one whose model keeps more of fp32's
//   detections on the first calibration images.
// Each decision and its numbers go into the layers' reasons (or the report's calibration) and
// the task's log.
#pragma once

#include <optional>

#include "engine/events/task_report.h"
#include "engine/export/calibration.h"
#include "engine/export/quantize_qdq.h"
#include "engine/tasks/export_int8.h"

namespace mrcnn::engine {

// `policy` with the layers that read a quantised layer's output directly quantised too.
exporter::Int8Policy withPairs(exporter::Int8Policy policy);

// `chosen` was built with `policy` (pair layers float); returns the model to keep and sets
// `policy` to the one it was built with.
exporter::Int8Model decidePairs(const Int8Request& r, const exporter::Calibration& calibration,
                                exporter::Int8Model chosen, exporter::Int8Policy& policy,
                                TaskReport& report);

// The range to build the int8 model with, measured (`policy` otherwise as it will be built).
exporter::CalibrationCache::RangeDecision decideRange(const Int8Request& r,
                                                      const exporter::Calibration& calibration,
                                                      exporter::Int8Policy policy);

// `chosen` was built with `policy`; its quantised fully connected layers are timed against a
// model with them float and the faster kept (int8 unless float is clearly faster). `timing`:
// the times a reused calibration cache holds, used instead of measuring; else set to what was
// measured (for the cache).
exporter::Int8Model decideFullyConnected(const Int8Request& r,
                                         const exporter::Calibration& calibration,
                                         exporter::Int8Model chosen,
                                         const exporter::Int8Policy& policy,
                                         std::optional<exporter::LayerTiming>& timing,
                                         TaskReport& report);

}  // namespace mrcnn::engine
