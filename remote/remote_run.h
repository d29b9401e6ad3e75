// A run of the engine on an SSH host: the spec put there, checked by the host's engine,
// started detached (it outlives the connection and the laptop), its events.jsonl followed
// over ssh from a byte offset (a dropped link is retried with backoff and the tail resumes
// where it stopped: no event lost or doubled), stopped gracefully, and its folder brought
// back with rsync.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "remote/child_process.h"
#include "remote/hosts.h"
#include "remote/ssh_command.h"

namespace mrcnn::remote {

// Where a run lives on the host: the spec as <work_dir>/<its file name> (relative paths in it
// are taken from work_dir there), the run as <work_dir>/runs/<run name>, with the launcher's
// own files beside the engine's: engine.log (its stdout and stderr), engine.pid, engine.exit.
struct RemoteRun {
  std::string spec;
  std::string run_dir;
};
RemoteRun remoteRun(const Host& host, const std::string& spec_file_name, const std::string& run_name);

// Puts `text` at `remote_path` on the host (its folder made). Throws RemoteError.
void uploadFile(const Host& host, const std::string& remote_path, std::string_view text);

// `ENGINE --spec SPEC --task validate ARGS...` on the host: its exit code and output (the
// spec's problems, as a local validate prints them). Throws RemoteError when ssh itself
// fails or the engine is not there.
ChildResult validateOnHost(const Host& host, const RemoteRun& run, const std::vector<std::string>& args);

// What a started run is waited on by: on an ssh host the process that waits for the engine
// (it writes engine.exit), on a SLURM host the job.
struct Waiter {
  int64_t pid = 0;
  std::string job;
};

// Starts `ENGINE --spec SPEC --run-dir RUN ARGS...` on an ssh host, detached (setsid, nohup).
// With nproc_per_node > 1 the host's mrcnn-workbench beside the engine starts that many ranks
// (--headless --nproc-per-node N). On a SLURM host: remote/slurm_job.h's submitJob.
Waiter startOnHost(const Host& host, const RemoteRun& run, const std::vector<std::string>& args);

struct FollowOptions {
  uint64_t offset = 0;  // bytes of events.jsonl already had
  std::function<void(std::string_view line)> on_event;
  // Said to the user: a dropped link, the next try.
  std::function<void(const std::string& notice)> on_notice;
  // Asked a few times a second while following (a stop request is acted on from here).
  std::function<void()> on_idle;
  int give_up_after_seconds = 600;  // of failed reconnects in a row
};

struct FollowResult {
  int exit_code = -1;   // the engine's (engine.exit), -1 when it is not known
  uint64_t offset = 0;  // bytes of events.jsonl handed over
  std::string log_tail; // the end of engine.log when the engine failed
};

// Follows the run until it ends (a job waiting in the queue: its state and reason as notices
// until it runs); throws RemoteError when the host cannot be reached for give_up_after_seconds.
FollowResult followOnHost(const Host& host, const RemoteRun& run, const Waiter& waiter, FollowOptions& options);

// The run's engine or job when it is still going on the host (started by an earlier launch
// whose terminal closed): then it is followed, not started a second time.
std::optional<Waiter> runningOnHost(const Host& host, const RemoteRun& run);

// The size of the run's events.jsonl on the host (0 when there is none): where following a
// resumed run starts, so that it shows the new events only, as a local resume does.
uint64_t eventsSize(const Host& host, const RemoteRun& run);

// The engine's graceful stop (SIGTERM; scancel --signal=TERM for a job): it finishes the
// step, saves and ends "stopped".
void stopOnHost(const Host& host, const RemoteRun& run);

// The run folder into `local_dir` (only what changed). Throws RemoteError with rsync's words.
void bringBack(const Host& host, const RemoteRun& run, const std::string& local_dir);

}  // namespace mrcnn::remote
