// Pieces of the native encoder that the OCSF and ECS encoders share, so every
// format writes strings, flags, errno names and times the same way (lossy
// UTF-8 plus <key>_b64 for the exact bytes; see audit_event.h), and shows
// paths and argv only through an EventText (redacted, cut; audit/redact.h).
#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/audit/json_writer.h"
#include "supervisor/audit/redact.h"
#include "supervisor/audit/audit_event.h"

namespace sv::supervisor {

// key: value, plus key_b64 with the exact bytes when value is not UTF-8.
void putString(JsonWriter& w, std::string_view key, std::string_view value);
// "target": {"pid", "comm"} when the event names one (native and ECS alike).
void writeTarget(JsonWriter& w, const AuditEvent& e);
// key: [..] (lossy), plus key_b64: [..] parallel when any element is not UTF-8;
// the elements `text` shows.
void putArgv(JsonWriter& w, EventText& text, std::string_view key,
             const std::vector<std::string>& argv);
// "truncated": true when the producer or `text` cut something; nothing otherwise.
// Written last, once every path and argv of the event went through `text`.
void writeTruncated(JsonWriter& w, const AuditEvent& e, const EventText& text);
void writeBase64(JsonWriter& w, std::string_view bytes);
void writeTime(JsonWriter& w, timespec time);  // "2026-11-29T10:33:11.123456789Z"
void writeErrno(JsonWriter& w, int err);       // "EACCES", null for 0
// ["O_WRONLY","O_CREAT"], named by the operation's flag family.
void writeFlagNames(JsonWriter& w, std::string_view operation, int flags);
// The value "<session_id>-<kind><n>": the native event_id, also OCSF metadata.uid and ECS event.id.
void writeEventId(JsonWriter& w, const SessionInfo& session, std::string_view kind, uint64_t n);
// "self_protected": [{"id","path","access"}, ...] of a session start record.
void writeSelfProtected(JsonWriter& w, EventText& text,
                        const std::vector<SelfProtectedPath>& paths);
// "environment": {"applied", "removed"|"would_remove": [{"name","rule":{"id","reason"}}],
// "set": [names]} of a session start record.
void writeEnvironment(JsonWriter& w, const SessionEnvironment& env);

}  // namespace sv::supervisor

namespace sv::supervisor {

// The last path component ("" for "" and "/").
std::string_view baseName(std::string_view path);
// argv joined by spaces, as one lossy string ("cmd_line" / "command_line").
void writeJoined(JsonWriter& w, EventText& text, const std::vector<std::string>& argv);
// Session records in OCSF `unmapped` / ECS `supervise`: "command" (start),
// "exit_code"/"exit_signal" and "counters" (end), "dropped" (dropped record).
void writeSessionDetails(JsonWriter& w, EventText& text, const AuditEvent& e);
// "schema": "supervise-<kAuditSchemaVersion>", in OCSF `unmapped` / ECS `supervise`.
void writeSchemaMarker(JsonWriter& w);
// "command_id" and "client": {"pid", "uid"} of a command run by the exec
// daemon (SessionInfo::command_id); nothing for any other session.
void writeDaemonRequest(JsonWriter& w, const SessionInfo& session);
// A uid/gid as a string ("1000"), null when unknown: OCSF and ECS ids are strings.
void writeIdString(JsonWriter& w, uint32_t id);
// "2026-11-29T10:33:11.123Z": milliseconds, the precision of an ECS (Elasticsearch) date.
void writeTimeMillis(JsonWriter& w, timespec time);

// The exact bytes of the strings that are not UTF-8, for the formats whose
// schemas define no `<name>_b64` sibling (OCSF, ECS): put() writes the lossy
// string and remembers the value under its attribute path, writeTo() writes
// them last in the format's free namespace, as OCSF `unmapped.b64` / ECS
// `supervise.b64`: {"file.path": "<base64>", "process.args": ["<base64>", ...]}.
// Views only (the event's strings and EventText's views of them): no allocation.
class ExactBytes {
 public:
  void put(JsonWriter& w, std::string_view key, std::string_view path, std::string_view value) {
    w.key(key);
    if (!w.string(value)) remember(path, value, nullptr);
  }
  // key: [...] (lossy) of the elements `text` shows; path keeps all of them
  // in base64 (parallel) when one is not UTF-8.
  void putArgv(JsonWriter& w, EventText& text, std::string_view key, std::string_view path,
               const std::vector<std::string>& argv);
  // "b64": {...}; nothing when every string was UTF-8.
  void writeTo(JsonWriter& w, EventText& text) const;

 private:
  struct Entry {
    std::string_view path, value;
    const std::vector<std::string>* argv;
  };
  void remember(std::string_view path, std::string_view value,
                const std::vector<std::string>* argv) {
    // More than every put() an encoder makes per event.
    if (n_ < kMax) entries_[n_++] = {path, value, argv};
  }
  static constexpr size_t kMax = 32;
  Entry entries_[kMax];
  size_t n_ = 0;
};

}  // namespace sv::supervisor
