// Local child processes for the remote transport: the system's ssh and rsync run from
// argument lists (never a shell string), their output read as it comes.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mrcnn::remote {

struct ChildResult {
  int exit_code = -1;   // the exit status, 128+N when killed by signal N, -1 when it did not start
  std::string out;      // stdout (runChild only)
  std::string err;      // stderr, the last 64 KiB
};

// Runs argv[0] (found on PATH) with `input` on its stdin, to its end.
ChildResult runChild(const std::vector<std::string>& argv, std::string_view input = {});

// Runs argv and hands each line of its stdout (without the newline) to `on_line`, as it
// comes; a last line without a newline is not handed over (it is incomplete). `should_stop`,
// asked a few times a second, ends the child (SIGTERM) when it says so.
ChildResult streamChild(const std::vector<std::string>& argv,
                        const std::function<void(std::string_view)>& on_line,
                        const std::function<bool()>& should_stop = {});

}  // namespace mrcnn::remote
