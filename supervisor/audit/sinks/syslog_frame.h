// RFC 5424 framing of an audit event: the key fields as structured data, the
// JSON event (in the session's --audit-format) as MSG.
//
//   <PRI>1 TIMESTAMP HOST supervise PROCID MSGID [sv@32473 seq="12" ...] {json}
//
// Facility 13 (log audit); severity warning for a deny, notice for a
// would-deny and session events, info otherwise. MSGID is the category
// ("file", "exec", "network", "process", "session") or "dropped". The SD-ID
// uses 32473, the private enterprise number RFC 5612 reserves for examples,
// until the project has its own. TIMESTAMP has microseconds, the most RFC 5424
// allows; the JSON keeps nanoseconds.
//
// Transports: UDP sends one message per datagram (RFC 5426); TCP and TLS put
// each behind its length, "LEN SP MSG" (octet counting, RFC 6587 / RFC 5425).
// Allocation-free once `out` has the capacity.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace sv::supervisor::audit {

struct SyslogFields {
  std::string_view host, session_id;
  int procid = 0;
  std::string_view msgid;  // category, or "dropped"
  int severity = 6;
  uint64_t seq = 0;  // 0: a dropped record (no seq of its own)
  std::string_view operation, decision, rule_id;
  int pid = 0;  // the process the decision was about
  uint64_t dropped = 0, dropped_first = 0, dropped_last = 0;  // dropped records
};

inline constexpr int kSyslogFacilityAudit = 13;
inline constexpr std::string_view kSyslogSdId = "sv@32473";

// Appends one message; with octet_counting its decimal length and a space first.
void appendSyslog(std::string& out, bool octet_counting, timespec time, const SyslogFields& f,
                  std::string_view json);

}  // namespace sv::supervisor::audit
