// The OpenVINO backend: an exported model.onnx (engine/export/onnx_export.h) compiled by
// OpenVINO's C++ runtime (the PyPI wheel's, found by cmake/MrcnnOpenVINO.cmake) for the CPU,
// one image a request. Precision: bf16 when asked (the spec's use_amp with amp_dtype bf16)
// and the CPU has it (AVX-512 BF16 or AMX), else f32 — set explicitly, since OpenVINO's own
// default on such a CPU is bf16. Throughput mode (streams > 1): the CPU's cores split into
// that many streams, as many requests in flight, each image given to the next free one and
// the results kept in the images' order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/inference/backend.h"

namespace mrcnn::engine {

struct OpenVinoOptions {
  std::filesystem::path onnx;
  bool bf16 = false;
  // The category id of each contiguous label (index 0 unused): the model's labels output
  // (category ids) is mapped back to labels with it.
  std::vector<int64_t> category_ids;
  int threads = 0;  // 0: OpenVINO's choice (every core)
  int streams = 1;  // 1: latency mode, one request; N > 1: throughput mode, N requests
};

// Throws std::runtime_error naming the file when it cannot be read or compiled.
std::unique_ptr<InferenceBackend> makeOpenVinoBackend(const OpenVinoOptions& options);

// The runtime's version, for --version and the events.
std::string openVinoVersion();

}  // namespace mrcnn::engine
