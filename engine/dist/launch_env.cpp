#include "engine/dist/launch_env.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace mrcnn::dist {
namespace {

// A whole decimal number in [lo, hi], or nullopt.
std::optional<long> number(const char* text, long lo, long hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::string_view s(text);
  long value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < lo || value > hi)
    return std::nullopt;
  return value;
}

}  // namespace

std::string firstSlurmHost(std::string_view list) {
  // The first entry: up to a comma outside brackets.
  size_t end = 0;
  for (int depth = 0; end < list.size(); ++end) {
    if (list[end] == '[') ++depth;
    if (list[end] == ']') --depth;
    if (list[end] == ',' && depth == 0) break;
  }
  const std::string_view entry = list.substr(0, end);
  const size_t open = entry.find('[');
  if (open == std::string_view::npos) return std::string(entry);
  const size_t close = entry.find(']', open);
  if (close == std::string_view::npos) return {};
  // Its first number or range start, digits as written ("03" keeps its zero).
  const std::string_view inside = entry.substr(open + 1, close - open - 1);
  size_t digits = 0;
  while (digits < inside.size() && inside[digits] >= '0' && inside[digits] <= '9') ++digits;
  if (digits == 0) return {};
  return std::string(entry.substr(0, open)) + std::string(inside.substr(0, digits)) +
         std::string(entry.substr(close + 1));
}

LaunchEnvResult readLaunchEnv(const std::function<const char*(const char*)>& get_env) {
  const auto get = [&](const char* name) -> const char* {
    const char* v = get_env ? get_env(name) : std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  LaunchEnvResult out;
  const auto fail = [&](const char* name, const std::string& why) {
    const char* v = get(name);
    out.error = std::string(name) + "=" + (v ? v : "(unset)") + ": " + why;
    return out;
  };

  // A group even for one process (MRCNN_DIST_FORCE_GROUP=1): its collectives run through
  // the group's backend (NCCL on a GPU) where a world of one would skip them.
  const char* forced = get("MRCNN_DIST_FORCE_GROUP");
  const bool force = forced != nullptr && (std::string_view(forced) == "1" ||
                                           std::string_view(forced) == "true");
  // torchrun first: under SLURM a job may still start torchrun per node, whose RANK wins.
  const char *rank_var = "RANK", *world_var = "WORLD_SIZE", *local_var = "LOCAL_RANK",
             *local_world_var = "LOCAL_WORLD_SIZE";
  LaunchEnv env;
  if (get("RANK") != nullptr || get("WORLD_SIZE") != nullptr) {
    env.launcher = "torchrun";
  } else if (get("SLURM_PROCID") != nullptr && get("SLURM_NTASKS") != nullptr) {
    env.launcher = "slurm";
    rank_var = "SLURM_PROCID";
    world_var = "SLURM_NTASKS";
    local_var = "SLURM_LOCALID";
    local_world_var = "SLURM_NTASKS_PER_NODE";
  } else if (!force) {
    out.env = env;
    return out;
  }
  if (env.launcher == "none") {  // one process forced into a group of its own
    env.force_group = true;
    if (const char* addr = get("MASTER_ADDR")) env.master_addr = addr;
    if (env.master_addr == "localhost") env.master_addr = "127.0.0.1";
    if (get("MASTER_PORT") != nullptr) {
      const auto port = number(get("MASTER_PORT"), 1, 65535);
      if (!port) return fail("MASTER_PORT", "a TCP port (1-65535) is needed");
      env.master_port = static_cast<uint16_t>(*port);
    }
    out.env = env;
    return out;
  }
  const auto world = number(get(world_var), 1, 1 << 20);
  if (!world) return fail(world_var, "the world size must be a whole number from 1");
  const auto rank = number(get(rank_var), 0, *world - 1);
  if (!rank) return fail(rank_var, "the rank must be a whole number below the world size " +
                                       std::to_string(*world));
  env.world_size = static_cast<int>(*world);
  env.rank = static_cast<int>(*rank);
  if (get(local_var) != nullptr) {
    const auto local = number(get(local_var), 0, *world - 1);
    if (!local) return fail(local_var, "the local rank must be a whole number below the world size");
    env.local_rank = static_cast<int>(*local);
  } else {
    env.local_rank = env.rank;
  }
  // SLURM writes "2(x3)" for heterogeneous layouts; only the plain count is used.
  if (const auto lw = number(get(local_world_var), 1, *world)) {
    env.local_world_size = static_cast<int>(*lw);
  } else {
    env.local_world_size = env.world_size;
  }
  env.force_group = force;
  if (!env.distributed()) {
    out.env = env;
    return out;
  }
  const bool slurm = env.launcher == "slurm";
  const char* nodes = nullptr;
  if (slurm) nodes = get("SLURM_JOB_NODELIST") ? get("SLURM_JOB_NODELIST") : get("SLURM_NODELIST");
  const std::string first_node = nodes != nullptr ? firstSlurmHost(nodes) : std::string();
  if (const char* addr = get("MASTER_ADDR")) {
    env.master_addr = addr;
  } else if (!first_node.empty()) {
    env.master_addr = first_node;  // rank 0 runs on the job's first node
  } else if (env.world_size > 1) {
    return fail("MASTER_ADDR", "a job of " + std::to_string(env.world_size) +
                                   " processes needs the address of rank 0's machine" +
                                   (slurm ? " (or SLURM_JOB_NODELIST, whose first host is taken)" : ""));
  }
  // torchrun's "localhost" may resolve to ::1 first; the store and gloo listen on IPv4.
  if (env.master_addr == "localhost") env.master_addr = "127.0.0.1";
  if (get("MASTER_PORT") == nullptr && slurm) {
    const auto job = number(get("SLURM_JOB_ID"), 0, std::numeric_limits<long>::max());
    env.master_port = static_cast<uint16_t>(29500 + (job ? *job % 10000 : 0));
  } else {
    const auto port = number(get("MASTER_PORT"), 1, 65535);
    if (!port) return fail("MASTER_PORT", "a TCP port (1-65535) is needed");
    env.master_port = static_cast<uint16_t>(*port);
  }
  if (const char* agent = get("TORCHELASTIC_USE_AGENT_STORE"))
    env.agent_store = std::string_view(agent) == "True" || std::string_view(agent) == "1";
  out.env = env;
  return out;
}

}  // namespace mrcnn::dist
