#include "remote/slurm_job.h"

#include "remote/remote_run.h"
#include "remote/ssh_command.h"

namespace mrcnn::remote {

std::string slurmCommand(const Host& host, const std::string& name) {
  const std::string& dir = host.slurm.commands_dir;
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string batchScript(const Host& host, const RemoteRun& run, const std::vector<std::string>& args) {
  const SlurmOptions& s = host.slurm;
  const int tasks = s.gpus_per_node > 0 ? s.gpus_per_node : host.nproc_per_node;
  std::string text = "#!/bin/sh\n";
  const auto sbatch = [&](const std::string& option) { text += "#SBATCH " + option + "\n"; };
  sbatch("--job-name=mrcnn-" + run.run_dir.substr(run.run_dir.rfind('/') + 1));
  sbatch("--output=" + run.run_dir + "/engine.log");
  sbatch("--nodes=" + std::to_string(s.nodes));
  sbatch("--ntasks-per-node=" + std::to_string(tasks));
  if (s.gpus_per_node > 0) {
    sbatch("--gpus-per-node=" + std::to_string(s.gpus_per_node));
    sbatch("--gpus-per-task=1");
  }
  if (!s.partition.empty()) sbatch("--partition=" + s.partition);
  if (!s.time.empty()) sbatch("--time=" + s.time);
  if (!s.account.empty()) sbatch("--account=" + s.account);
  for (const std::string& line : s.extra) text += line + "\n";
  text += "# Written by mrcnn-workbench for " + run.spec + "\n";
  text += "cd " + shellQuote(run.run_dir) + " || exit 1\n";
  // The rendezvous of the ranks (the engine reads SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).
  text += "MASTER_ADDR=$(" + shellQuote(slurmCommand(host, "scontrol")) +
          " show hostnames \"$SLURM_JOB_NODELIST\" 2>/dev/null | head -n 1)\n";
  text += "export MASTER_ADDR=\"${MASTER_ADDR:-$(hostname)}\"\n";
  text += "export MASTER_PORT=\"${MASTER_PORT:-29500}\"\n";
  std::vector<std::string> engine = {slurmCommand(host, "srun"), host.engine, "--spec", run.spec,
                                     "--run-dir", run.run_dir};
  engine.insert(engine.end(), args.begin(), args.end());
  text += remoteCommand(engine) + "\n";
  text += "echo $? > engine.exit\n";
  return text;
}

std::string submitJob(const Host& host, const RemoteRun& run, const std::string& script) {
  const std::string file = run.run_dir + "/job.sbatch";
  uploadFile(host, file, script);
  // sbatch --parsable prints "<id>" or "<id>;<cluster>".
  const ChildResult r = runOnHost(
      host, {"sh", "-c", "rm -f \"$2/engine.exit\" \"$2/engine.waiter\" && \"$1\" --parsable \"$2/job.sbatch\" > \"$2/engine.job\" && cat \"$2/engine.job\"",
             "sh", slurmCommand(host, "sbatch"), run.run_dir});
  if (r.exit_code != 0) throwRemote(host, "sbatch refused " + file, r);
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    throw RemoteError(host.name + ": sbatch said \"" + lastLines(r.out, 1) + "\", not a job id");
  }
  return id;
}

JobState jobState(const Host& host, const std::string& job) {
  const ChildResult r = runOnHost(host, {slurmCommand(host, "squeue"), "-h", "-j", job, "-o", "%T|%r"});
  if (r.exit_code == 255) throwRemote(host, "cannot ask squeue about job " + job, r);
  JobState state;
  const std::string line = lastLines(r.out, 1);  // squeue exits non-zero for a job it forgot
  if (r.exit_code != 0 || line.empty()) return state;
  const size_t bar = line.find('|');
  state.state = line.substr(0, bar);
  if (bar != std::string::npos) state.reason = line.substr(bar + 1);
  return state;
}

}  // namespace mrcnn::remote
