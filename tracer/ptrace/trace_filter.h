// The ptrace backend's seccomp filter: the host backend's program, with
// SECCOMP_RET_TRACE where that one answers SECCOMP_RET_USER_NOTIF, behind a
// guard for the scratch region (scratch.h).
//
// Same shape as the user-notify filter: only the syscalls the policy must
// see stop at the tracer (PTRACE_EVENT_SECCOMP); everything else runs at
// full speed. The guard comes first and only ever returns RET_TRACE (with
// data kGuardTraceData) or falls through to the program, whose ABI check
// still kills a foreign one.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/result.h"

namespace sv::tracer {

// `notify_program` is a program buildSeccompFilter() made (prebuilt or not).
// Fails when the result would exceed BPF_MAXINSNS.
Result<std::vector<sock_filter>> traceFilterOf(const std::vector<sock_filter>& notify_program);

}  // namespace sv::tracer
