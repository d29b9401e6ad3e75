#include "remote/hosts.h"

#include <simdjson.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "io/atomic_file.h"
#include "io/json_writer.h"

namespace mrcnn::remote {
namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;

std::string text(element value, const std::string& file, const std::string& place) {
  std::string_view s;
  if (value.get_string().get(s)) throw HostsError(file, place, "expected a string");
  return std::string(s);
}

int whole(element value, const std::string& file, const std::string& place, int64_t min,
          int64_t max) {
  int64_t v = 0;
  if (value.get_int64().get(v) || v < min || v > max) {
    throw HostsError(file, place,
                     "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return static_cast<int>(v);
}

std::vector<std::string> strings(element value, const std::string& file, const std::string& place) {
  simdjson::dom::array array;
  if (value.get_array().get(array)) throw HostsError(file, place, "expected a list of strings");
  std::vector<std::string> out;
  size_t i = 0;
  for (element e : array) out.push_back(text(e, file, place + "[" + std::to_string(i++) + "]"));
  return out;
}

SlurmOptions readSlurm(element value, const std::string& file, const std::string& place) {
  simdjson::dom::object object;
  if (value.get_object().get(object)) throw HostsError(file, place, "expected an object");
  SlurmOptions s;
  for (auto [key, v] : object) {
    const std::string at = place + "." + std::string(key);
    if (key == "partition") s.partition = text(v, file, at);
    else if (key == "nodes") s.nodes = whole(v, file, at, 1, 100000);
    else if (key == "gpus_per_node") s.gpus_per_node = whole(v, file, at, 0, 1024);
    else if (key == "time") s.time = text(v, file, at);
    else if (key == "account") s.account = text(v, file, at);
    else if (key == "extra") s.extra = strings(v, file, at);
    else if (key == "commands_dir") s.commands_dir = text(v, file, at);
    else throw HostsError(file, at, "unknown key (partition, nodes, gpus_per_node, time, account, extra, commands_dir)");
  }
  // Each value becomes a line of the batch script: one line each.
  for (const auto& [field, line] : {std::pair{"partition", &s.partition}, std::pair{"time", &s.time},
                                    std::pair{"account", &s.account}, std::pair{"commands_dir", &s.commands_dir}}) {
    if (line->find_first_of("\n\r") != std::string::npos) throw HostsError(file, place + "." + field, "one line");
  }
  for (size_t i = 0; i < s.extra.size(); ++i) {
    if (s.extra[i].find_first_of("\n\r") != std::string::npos)
      throw HostsError(file, place + ".extra[" + std::to_string(i) + "]", "one line");
  }
  return s;
}

Host readHost(element value, const std::string& file, const std::string& place) {
  simdjson::dom::object object;
  if (value.get_object().get(object)) throw HostsError(file, place, "expected an object");
  Host h;
  for (auto [key, v] : object) {
    const std::string at = place + "." + std::string(key);
    if (key == "name") h.name = text(v, file, at);
    else if (key == "kind") h.kind = text(v, file, at);
    else if (key == "destination") h.destination = text(v, file, at);
    else if (key == "port") h.port = whole(v, file, at, 0, 65535);
    else if (key == "identity_file") h.identity_file = text(v, file, at);
    else if (key == "ssh_options") h.ssh_options = strings(v, file, at);
    else if (key == "engine") h.engine = text(v, file, at);
    else if (key == "work_dir") h.work_dir = text(v, file, at);
    else if (key == "nproc_per_node") h.nproc_per_node = whole(v, file, at, 1, 1024);
    else if (key == "slurm") h.slurm = readSlurm(v, file, at);
    else {
      throw HostsError(file, at,
                       "unknown key (name, kind, destination, port, identity_file, ssh_options, "
                       "engine, work_dir, nproc_per_node, slurm)");
    }
  }
  for (const auto& [field, value_of] : {std::pair{"name", &h.name}, std::pair{"destination", &h.destination},
                                        std::pair{"engine", &h.engine}, std::pair{"work_dir", &h.work_dir}}) {
    if (value_of->empty()) throw HostsError(file, place + "." + field, "missing or empty");
  }
  if (h.kind != "ssh" && h.kind != "slurm") throw HostsError(file, place + ".kind", "use \"ssh\" or \"slurm\"");
  // ssh would read a destination starting with '-' as an option.
  if (h.destination.front() == '-') throw HostsError(file, place + ".destination", "must not start with '-'");
  for (const auto& [field, path] : {std::pair{"engine", &h.engine}, std::pair{"work_dir", &h.work_dir}}) {
    if (path->front() != '/') {
      throw HostsError(file, place + "." + field, "an absolute path on the host (\"" + *path + "\" is not)");
    }
  }
  return h;
}

}  // namespace

HostsError::HostsError(const std::string& file, const std::string& place, const std::string& why)
    : std::runtime_error(file + (place.empty() ? "" : ": " + place) + ": " + why) {}

const Host* HostsFile::find(const std::string& name) const {
  for (const Host& h : hosts)
    if (h.name == name) return &h;
  return nullptr;
}

fs::path defaultHostsPath() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "mrcnn-workbench" / "hosts.json";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/") / ".config" / "mrcnn-workbench" / "hosts.json";
}

HostsFile loadHosts(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  simdjson::padded_string bytes;
  if (simdjson::padded_string::load(path.string()).get(bytes)) {
    throw HostsError(path.string(), "", "cannot be read");
  }
  return parseHosts(std::string_view(bytes.data(), bytes.size()), path.string());
}

HostsFile parseHosts(std::string_view json, const std::string& file) {
  HostsFile result;
  simdjson::dom::parser parser;
  element doc;
  if (parser.parse(simdjson::padded_string(json)).get(doc)) throw HostsError(file, "", "not JSON");
  simdjson::dom::object top;
  simdjson::dom::array list;
  if (doc.get_object().get(top) || top["hosts"].get_array().get(list)) {
    throw HostsError(file, "", "expected {\"hosts\": [...]}");
  }
  std::set<std::string> names;
  size_t i = 0;
  for (element e : list) {
    const std::string place = "hosts[" + std::to_string(i++) + "]";
    Host h = readHost(e, file, place);
    if (!names.insert(h.name).second) throw HostsError(file, place + ".name", "\"" + h.name + "\" named twice");
    result.hosts.push_back(std::move(h));
  }
  return result;
}

std::string hostsJson(const HostsFile& hosts) {
  std::ostringstream out;
  {
    io::JsonWriter w(out);
    w.beginObject().key("hosts").beginArray();
    for (const Host& h : hosts.hosts) {
      w.beginObject().key("name").value(h.name).key("kind").value(h.kind).key("destination").value(h.destination);
      if (h.port != 0) w.key("port").value(h.port);
      if (!h.identity_file.empty()) w.key("identity_file").value(h.identity_file);
      if (!h.ssh_options.empty()) {
        w.key("ssh_options").beginArray();
        for (const std::string& o : h.ssh_options) w.value(o);
        w.endArray();
      }
      w.key("engine").value(h.engine).key("work_dir").value(h.work_dir).key("nproc_per_node").value(h.nproc_per_node);
      if (h.kind == "slurm") {
        const SlurmOptions& s = h.slurm;
        w.key("slurm").beginObject().key("partition").value(s.partition).key("nodes").value(s.nodes)
            .key("gpus_per_node").value(s.gpus_per_node).key("time").value(s.time).key("account").value(s.account)
            .key("extra").beginArray();
        for (const std::string& line : s.extra) w.value(line);
        w.endArray();
        if (!s.commands_dir.empty()) w.key("commands_dir").value(s.commands_dir);
        w.endObject();
      }
      w.endObject();
    }
    w.endArray().endObject();
  }
  return out.str() + "\n";
}

void saveHosts(const fs::path& path, const HostsFile& hosts) {
  const std::string text = hostsJson(hosts);
  parseHosts(text, path.string());  // what is saved reads back: every host checked
  fs::create_directories(path.parent_path());
  io::writeFileAtomic(path, text);
}

}  // namespace mrcnn::remote
