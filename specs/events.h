// The engine's events (specs/events.proto) as JSON lines: the one writer and reader both
// sides use, so that the engine, the headless launcher and the GUI agree on the format.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "events.pb.h"

namespace mrcnn::events {

inline constexpr uint32_t kProtocolVersion = 1;

// One line (no newline) in protobuf's JSON mapping; v is set to kProtocolVersion when 0.
std::string toJsonLine(Event event);

// Parses one line; unknown fields are ignored (a newer engine's events stay readable).
// Returns std::nullopt and sets *error (when given) for a line that is not an event.
std::optional<Event> parseJsonLine(std::string_view line, std::string* error = nullptr);

// A duration as events are read out to people: "42s", "3m07s", "1h02m03s"; "?" when negative
// or not finite.
std::string formatDuration(double seconds);

}  // namespace mrcnn::events
