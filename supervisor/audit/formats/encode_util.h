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
// A uid/gid as a string ("1000"), null when unknown: OCSF and ECS ids are strings.
void writeIdString(JsonWriter& w, uint32_t id);

}  // namespace sv::supervisor
