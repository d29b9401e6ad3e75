// Exit codes of mrcnn-engine, passed on unchanged by `mrcnn-workbench --headless`.
#pragma once

namespace mrcnn::engine {

inline constexpr int kExitOk = 0;       // done, or stopped on request
inline constexpr int kExitFailed = 1;   // the task failed while running
inline constexpr int kExitUsage = 2;    // bad command line
inline constexpr int kExitBadSpec = 3;  // the spec has errors
inline constexpr int kExitBadData = 4;  // a dataset, checkpoint or path cannot be used

}  // namespace mrcnn::engine
