// Reference encoder for the differential test: the pre-JsonWriter encodeEvent.
#pragma once

#include "supervisor/audit/audit_event.h"

namespace sv::supervisor::legacy {
std::string legacyEncodeEvent(const AuditEvent& e, const SessionInfo& session, uint64_t seq,
                              timespec time);
}  // namespace sv::supervisor::legacy
