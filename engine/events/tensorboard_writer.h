// TensorBoard's event files, written by the engine itself: <run dir>/tensorboard/
// events.out.tfevents.<unix seconds>.<host>.<pid>, a sequence of TFRecord records (a little-
// endian uint64 length, its masked CRC-32C, the serialized Event of specs/tensorboard.proto,
// its masked CRC-32C), the first holding the file version. The training run's events become
// scalars as they are written (onEvent, hooked to the EventWriter): every loss, the learning
// rate, images/s, the data wait, memory, the loss scale, and the 12 COCO stats of each IoU
// type at each evaluation, tagged in groups ("loss/total", "train/learning_rate",
// "eval/bbox_AP50", ..., the validation losses as "val_loss/total", ...), and with each evaluation
// the PR curve of every class at IoU .50 from its metrics file, as the pr_curves plugin's data
// ("pr_curves/segm/circle": precision and recall at score thresholds 0, .01, ..., 1, from
// pycocotools' precision and scores), and the evaluation's overlay images when
// visualize_images_summary draws them ("eval_images/image-ID", the PNGs of eval/overlays/). A
// record goes out in one write(2); a short write (a full
// disk) is cut back and reported, so a reader never sees a torn record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>

#include "specs/events.h"

namespace mrcnn::tensorboard {
class Event;
}

namespace mrcnn::train {

// TFRecord's masking of the CRC-32C (dataset/convert/crc32c.h) of `size` bytes.
uint32_t maskedCrc32c(const void* data, std::size_t size);

class TensorBoardWriter {
 public:
  // Creates `dir` and a new event file in it, with the file-version record. Throws
  // std::runtime_error naming the file and the system's reason.
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void scalar(const std::string& tag, double value, int64_t step, double wall_time);
  // One record holding several values (a progress or eval event's scalars).
  void write(const tensorboard::Event& event);

  // The engine's events as scalars (progress and eval; the others carry none).
  void onEvent(const events::Event& event);

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace mrcnn::train
