// Landlock: the filesystem floor under every other mechanism.
//
// The ruleset is built in the parent (allocation, path lookups, error
// reporting) and only restrictSelf() runs in the forked child. Everything the
// running ABI can handle is handled, so whatever the plan does not grant is
// denied by the kernel even if a user-notify decision is raced. Network rights
// (ABI 4) are deliberately left unhandled: connect/bind are decided by the
// cgroup BPF programs, which can express CIDRs and ports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/compile.h"

namespace sv::tracer {

// Highest Landlock ABI the running kernel supports; 0 when Landlock is
// unavailable (not built, not in the `lsm=` list) or disabled by
// SUPERVISE_TEST_DISABLE=landlock. Not async-signal-safe (reads the env).
int landlockAbi();

// The access rights handled at `abi` (filesystem only; see file comment).
uint64_t landlockHandledFs(int abi);

// Builds a ruleset fd for `plan` at `abi` (pass landlockAbi()). Parent side,
// not async-signal-safe. Read → READ_FILE|READ_DIR, write → WRITE_FILE,
// REMOVE_*, MAKE_*, REFER, TRUNCATE, IOCTL_DEV, exec → EXECUTE, each masked by
// what the ABI handles; on a non-directory the directory-only rights are
// dropped (the kernel rejects them with EINVAL). Paths that do not exist are
// skipped and appended to `skipped` when given. Scopes (ABI 6) follow
// plan.scope_abstract_unix / plan.scope_signal.
Result<UniqueFd> buildLandlockRuleset(const policy::LandlockPlan& plan, int abi,
                                      std::vector<std::string>* skipped = nullptr);

// In the child after fork: sets PR_SET_NO_NEW_PRIVS (Landlock requires it
// without CAP_SYS_ADMIN; it is idempotent) and enforces the ruleset on the
// calling thread. Async-signal-safe: raw syscalls only. Returns 0 or -errno.
// The caller may close ruleset_fd afterwards. `flags`: 0, or (ABI 7)
// abi::kLandlockRestrictSelfLogNewExecOn so the kernel keeps writing audit
// records of the domain's denials after the execve that follows.
int restrictSelf(int ruleset_fd, unsigned flags = 0);

// Whether the kernel accepts a ruleset that handles exactly these rights and
// scopes (creates one and closes it): doctor lists each right this way.
bool landlockAccepts(uint64_t fs, uint64_t net, uint64_t scoped);

}  // namespace sv::tracer
