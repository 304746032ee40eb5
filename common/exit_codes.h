// The exit statuses of supervise itself, the same for `supervise --`,
// `supervise exec` and `supervise-exec`; any other status is the command's.
#pragma once

namespace sv {

inline constexpr int kExitUsage = 2;          // a usage error of supervise itself
inline constexpr int kExitPolicyError = 2;    // the policy (or a request) is invalid
inline constexpr int kExitSupervisorError = 125;
inline constexpr int kExitCannotRun = 126;
inline constexpr int kExitNotFound = 127;

}  // namespace sv
