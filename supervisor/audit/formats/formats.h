// --audit-format ocsf|ecs: the same events, shaped for a SIEM's own schema.
//
// OCSF 1.8.0 (declared), written so that it is valid OCSF 1.1.0 too: File
// System Activity (1001), Process Activity (1007), Network Activity (4001)
// with the Security Control profile (action_id allowed/denied,
// disposition_id, firewall_rule) and Application Lifecycle (6002) for session
// start/end and dropped records. ECS 8.11.0, valid in the current ECS too:
// event.kind/category/type/action, rule.*, process.*, file.*,
// destination.*, host.*, agent.*. What the schemas have no field for
// (syscall, enforced_by, flags, boot id, the policy in OCSF 1.1.0, the exact
// bytes of names that are not UTF-8) goes under OCSF `unmapped` / ECS
// `supervise.*`, never lost. docs/audit-events.md has the mapping tables;
// audit_schema_test validates a stream of every event kind against each of
// the four schema versions (tests/schemas/).
//
// Both encoders write with JsonWriter like the native one: no allocation once
// the buffer is warm, whatever the format.
#pragma once

#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "policy/model.h"
#include "supervisor/audit/audit_event.h"

namespace sv::supervisor {

using AuditFormat = policy::AuditFormat;

std::optional<AuditFormat> parseAuditFormat(std::string_view name);  // native|ocsf|ecs

// seq 0: the event has no seq (dropped records).
void encodeOcsfTo(std::string& out, const AuditEvent& event, const SessionInfo& session,
                  uint64_t seq, timespec time);
void encodeEcsTo(std::string& out, const AuditEvent& event, const SessionInfo& session,
                 uint64_t seq, timespec time);

// Dispatch on the format; native is encodeEventTo().
void encodeEventAs(AuditFormat format, std::string& out, const AuditEvent& event,
                   const SessionInfo& session, uint64_t seq, timespec time);
// The dropped record in the format (native: encodeDropped()).
std::string encodeDroppedAs(AuditFormat format, const SessionInfo& session, timespec time,
                            uint64_t count, uint64_t first_seq, uint64_t last_seq, uint64_t total);
// The seq of an encoded event (native "seq", OCSF metadata.sequence, ECS
// event.sequence); 0 for a dropped record or a line that is not an event.
// Parses the whole line: for the loss path only.
uint64_t recordSeq(AuditFormat format, std::string_view line);

}  // namespace sv::supervisor
