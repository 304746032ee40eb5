// The effective policy as JSON, for the session start event and its digest.
//
// Session start records what the command actually ran under (preset, files,
// -o overrides and environment already merged), and every event carries
// policy.sha256 = sha256 of this document's compact dump, so a SIEM can tell
// two sessions ran the same policy without comparing documents. Canonical:
// fixed member order, rules in policy order, origins left out (moving a rule
// to another file does not change what is enforced).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "policy/model.h"
#include "supervisor/audit/audit_event.h"

namespace sv::supervisor {

nlohmann::ordered_json effectivePolicyJson(const policy::Policy& policy);
// The compact dump of an effectivePolicyJson(): what the digest hashes and
// the session start event carries.
std::string effectivePolicyText(const nlohmann::ordered_json& effective);
// sha256Hex(effectivePolicyText(effectivePolicyJson(policy))).
std::string policyDigest(const policy::Policy& policy);
// The same from an effectivePolicyJson() already built.
std::string policyDigest(const nlohmann::ordered_json& effective);

// The session start record's `self_protected`: every self-protected path of
// the policy once, in rule order, "read-write" when reads are denied too.
// Not part of effectivePolicyJson(): it depends on the session's own files
// (audit file, binary), not on the policy text, so the digest stays the
// policy's.
std::vector<SelfProtectedPath> selfProtectedPaths(const policy::Policy& policy);

}  // namespace sv::supervisor
