// A run on a SLURM cluster's login host: the batch script written for a spec (one task a GPU,
// or nproc_per_node tasks on CPUs, the rendezvous address from the job's first node; the
// engine reads SLURM's variables itself), submitted with sbatch, its place in the queue read
// with squeue, a graceful stop with scancel.
#pragma once

#include <string>
#include <vector>

#include "remote/hosts.h"

namespace mrcnn::remote {

struct RemoteRun;

// The path of a SLURM command on the host (slurm.commands_dir, else the name alone).
std::string slurmCommand(const Host& host, const std::string& name);

// The batch script of `ENGINE --spec SPEC --run-dir RUN ARGS...` for the host's SLURM options:
// #SBATCH lines, the engine started by srun, its exit code into engine.exit.
std::string batchScript(const Host& host, const RemoteRun& run, const std::vector<std::string>& args);

// Puts `script` at <run dir>/job.sbatch on the host and submits it; returns the job id (also
// kept in <run dir>/engine.job). Throws RemoteError with sbatch's words.
std::string submitJob(const Host& host, const RemoteRun& run, const std::string& script);

struct JobState {
  std::string state;   // PENDING, RUNNING, ...; empty: no longer in the queue
  std::string reason;  // squeue's reason (Resources, Priority, ...)
};
JobState jobState(const Host& host, const std::string& job);

}  // namespace mrcnn::remote
