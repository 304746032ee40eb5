// SHA-256 (FIPS 180-4), for the audit events' policy.sha256.
//
// One digest per session start: small and self-contained beats a crypto
// library dependency for that. Tested against the FIPS example vectors.
#pragma once

#include <string>
#include <string_view>

namespace sv::supervisor {

// Lowercase hex digest of `data` (64 chars).
std::string sha256Hex(std::string_view data);

}  // namespace sv::supervisor
