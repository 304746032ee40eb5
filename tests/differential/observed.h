// The observed side of the differential: what the runner printed for each
// request under a backend, and the decision events of that session's audit
// file, in the shape the oracle predicts them (expected.h, EventKey).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "tests/differential/expected.h"

namespace sv::differential {

// The errno of each request in order ("<index> <errno>" lines of run_requests).
Result<std::vector<int>> readOutcomes(const std::string& path);

struct AuditTrail {
  std::vector<EventKey> decisions;            // file, exec and network decisions
  std::map<std::string, size_t> enforced_by;  // of those decisions: "seccomp" -> n
  size_t dropped = 0;     // events the session reported lost (`dropped` records)
  size_t unrecorded = 0;  // decisions the kernel could not report (end counters)
};

Result<AuditTrail> readAuditTrail(const std::string& path);


}  // namespace sv::differential
