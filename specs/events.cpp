#include "specs/events.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdio>

namespace mrcnn::events {

std::string toJsonLine(Event event) {
  if (event.v() == 0) event.set_v(kProtocolVersion);
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = false;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(event, &out, options);
  if (!status.ok()) out = R"({"v":1,"type":"error","message":"event not serialisable"})";
  return out;
}

std::optional<Event> parseJsonLine(std::string_view line, std::string* error) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
    line.remove_suffix(1);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  Event event;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(line), &event, options);
  if (!status.ok()) {
    if (error) *error = std::string(status.message());
    return std::nullopt;
  }
  if (event.type().empty()) {
    if (error) *error = "no \"type\" field";
    return std::nullopt;
  }
  return event;
}

std::string formatDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  const long long s = std::llround(seconds);
  char buf[48];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", s / 3600, s / 60 % 60, s % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

}  // namespace mrcnn::events
