// The label check's last step, shared by its file mode (label_check_files_task.cpp) and its
// spec mode (label_check_task.cpp): the detections in `results` against `annotations`,
// mistakes.json into `output_dir`, the first entries and the done event through `report`.
#pragma once

#include <filesystem>

#include "engine/events/task_report.h"
#include "engine/tasks/tasks.h"

namespace mrcnn::engine {

// `results_given`: the results file is the user's (named in mistakes.json), not the task's
// own inference; `image_dir` (optional) is where the annotations' images are, for the review.
int checkLabels(const std::filesystem::path& annotations, const std::filesystem::path& results,
                bool results_given, const std::filesystem::path& image_dir,
                const LabelCheckOptions& options, const std::filesystem::path& output_dir,
                TaskReport& report);

}  // namespace mrcnn::engine
