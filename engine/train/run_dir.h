// The layout of a run directory (../shared/DESIGN.md, "Run directory"), in one place so that
// the engine, the tests and the resume logic agree on every name:
//
//   <run dir>/spec.txt            the spec as run
//            events.jsonl         the engine's events, one JSON object a line
//            log.txt              the engine's log
//            checkpoints/         model.step-N.pt, `last` and `best` pointers
//            eval/step-N.json     metrics of the evaluation at step N
//            inference/           overlays and results.json
#pragma once

#include <cstdint>
#include <filesystem>

namespace mrcnn::train {

class RunDir {
 public:
  explicit RunDir(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path specFile() const { return root_ / "spec.txt"; }
  std::filesystem::path eventsFile() const { return root_ / "events.jsonl"; }
  std::filesystem::path logFile() const { return root_ / "log.txt"; }
  std::filesystem::path checkpointsDir() const { return root_ / "checkpoints"; }
  std::filesystem::path evalDir() const { return root_ / "eval"; }
  std::filesystem::path evalFile(uint64_t step) const;  // eval/step-N.json
  // eval/overlays/step-N/image-ID.png (visualize_images_summary)
  std::filesystem::path overlayFile(uint64_t step, int64_t image_id) const;
  std::filesystem::path inferenceDir() const { return root_ / "inference"; }
  // TensorBoard's event files (tensorboard_writer.h): a new one for each start or resume.
  std::filesystem::path tensorboardDir() const { return root_ / "tensorboard"; }

  // Creates the root, checkpoints/ and eval/ (inference/ is made by the inference task).
  // Throws std::runtime_error naming the folder and the system's reason.
  void create() const;

  // An existing run to resume: the checkpoints folder has a `last` pointer or a
  // model.step-N.pt file. A run directory with only spec.txt (a run stopped before its
  // first checkpoint) starts over.
  bool hasCheckpoint() const;

 private:
  std::filesystem::path root_;
};

}  // namespace mrcnn::train
