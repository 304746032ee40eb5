// Dropping capabilities in the child before exec.
//
// A tree started by root would otherwise keep every capability, and as uid 0
// regain the full bounding set at each exec. Clearing the bounding set (not
// just the effective set) is what survives exec; ambient caps are cleared so
// nothing is inherited by non-root programs either.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace sv::tracer {

// In the child after fork, before exec. Async-signal-safe (raw prctl/capset,
// no allocation). Clears the ambient set, drops every bounding capability not
// in `keep_mask` (bit n = capability n; iterates until the kernel says EINVAL,
// i.e. past cap_last_cap), then sets effective = permitted = inheritable =
// keep_mask (intersected with what the process has). Needs CAP_SETPCAP for the
// bounding set; without it (non-root) that step is skipped, since such a
// process cannot raise capabilities anyway. Returns 0 or -errno.
int dropCapabilities(uint64_t keep_mask);

// Parent side: "CAP_NET_BIND_SERVICE" / "net_bind_service" (any case) → bit
// mask. EINVAL naming the first unknown capability.
Result<uint64_t> capabilityMask(const std::vector<std::string>& names);

// Whether the calling thread has capability `cap` in its effective set.
bool hasEffectiveCapability(int cap);

}  // namespace sv::tracer
