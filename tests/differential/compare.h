// Holds a backend's observations against the engine's expectations.
//
// Two comparisons: the verdict of every request (EACCES/EPERM = deny, any
// other outcome = allow: a refused connect or a missing file still got past
// the policy), and the audit trail as a multiset of (what, decision, rule)
// per thing decided, so events are matched to requests by path and
// destination, whatever order the backend's sources (user-notify, cgroup
// programs, kernel audit) wrote them in. Each distinct difference is one
// line naming the request that shows it.
#pragma once

#include <string>
#include <vector>

#include "tests/differential/expected.h"
#include "tests/differential/observed.h"
#include "tests/differential/request.h"

namespace sv::differential {

// A difference that is understood and documented: it is reported and
// counted apart, and does not fail the test. `match` is a substring of the
// request text (verdicts) or of the event's `what` (events).
struct KnownDifference {
  std::string match;
  std::string reason;
};

struct Comparison {
  size_t requests = 0;
  size_t allowed = 0, denied = 0;  // as the backend's syscalls ended
  size_t undecided = 0;            // failed before any policy was asked (CompareOptions)
  size_t differences = 0;          // distinct, not known
  size_t known = 0;                // distinct, known
  size_t events_compared = 0, events_ignored = 0;
  size_t denial_rules = 0;  // distinct (subject, rule) denials compared (Events::DenialRules)
  std::vector<std::string> lines;  // every distinct difference, known ones marked
};

struct CompareOptions {
  std::vector<KnownDifference> known;
  // Every: the oracle predicts the events of the user-notify handler and
  // the cgroup programs (the host and ptrace backends), each one compared.
  // DenialRules: the backend's events are shaped otherwise (bpf-lsm: one per
  // hook), so its denials are compared as distinct (subject, rule) pairs:
  // each the engine gave for a request the backend refused must be among
  // them, and none may name a rule the engine did not give that subject.
  enum class Events { Every, DenialRules };
  Events events = Events::Every;
  // Outcomes that mean the kernel failed the call before any policy was
  // asked (the BPF LSM's hooks run after the lookup: a missing source is
  // ENOENT, an existing target EEXIST): neither allowed nor denied.
  std::vector<int> undecided;
};

// `expected[i]` is the oracle's for `requests[i]`; `extra` are events the
// session writes besides the requests' (the command's own exec).
Comparison compare(const std::vector<Request>& requests, const std::vector<Expectation>& expected,
                   const std::vector<int>& outcomes, const AuditTrail& trail,
                   const std::vector<EventKey>& extra, const CompareOptions& options);

}  // namespace sv::differential
