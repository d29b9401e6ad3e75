// Exit codes of mrcnn-engine, passed on unchanged by `mrcnn-workbench --headless`.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace mrcnn::engine {

inline constexpr int kExitOk = 0;       // done, or stopped on request
inline constexpr int kExitFailed = 1;   // the task failed while running
inline constexpr int kExitUsage = 2;    // bad command line
inline constexpr int kExitBadSpec = 3;  // the spec has errors
inline constexpr int kExitBadData = 4;  // a dataset, checkpoint or path cannot be used

// A failure that ends a task from anywhere inside it, with its event code and exit code: the
// task harness (engine/harness/task_harness.h) reports it through the one failure path.
class TaskFailure : public std::runtime_error {
 public:
  TaskFailure(std::string code, const std::string& message, int exit_code)
      : std::runtime_error(message), code_(std::move(code)), exit_code_(exit_code) {}
  const std::string& code() const { return code_; }
  int exitCode() const { return exit_code_; }

 private:
  std::string code_;
  int exit_code_;
};

}  // namespace mrcnn::engine
