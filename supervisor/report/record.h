// One audit line of any format the project writes (native, OCSF, ECS;
// docs/audit-events.md) reduced to what `supervise report` aggregates.
// decodeLine() is the only place that knows the three shapes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sv::report {

enum class RecordKind { Decision, SessionStart, SessionEnd, Other };

struct Record {
  RecordKind kind = RecordKind::Other;
  std::string format;      // "native" | "ocsf" | "ecs"
  std::string session_id;
  std::string event_id;    // "<session>-<seq>"
  uint64_t seq = 0;
  int64_t time_ms = -1;    // epoch milliseconds, -1 when unknown
  std::string time;        // as written (RFC 3339)
  // Decisions.
  std::string category;    // file | exec | network | process
  std::string operation;   // write, exec, connect, ...
  std::string decision;    // allow | deny | would-deny
  std::string rule_id, rule_reason;
  std::string target;      // file path, exec path, "ip:port" or unix path
  // The process that made the call (decisions) or ran (session start).
  int64_t pid = -1, ppid = -1;
  std::string comm;
  std::string command;     // argv joined by spaces
  // Session end.
  bool has_exit = false;
  int64_t exit_code = -1;  // -1 when killed
  std::string exit_signal; // "SIGKILL", a number, or ""

  bool operator==(const Record&) const = default;
};

// Parses one line. false: not JSON, or JSON that is not an audit record of
// any of the three formats (*why says which). Never throws.
bool decodeLine(std::string_view line, Record* out, std::string* why);

// "2026-11-29T10:33:11.123456789Z" → epoch ms; -1 when malformed.
int64_t parseRfc3339Ms(std::string_view text);

}  // namespace sv::report
