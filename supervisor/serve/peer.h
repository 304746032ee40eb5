// Who is on the other end of a daemon connection, and whether it may be
// served (docs/serve.md, "Who may connect").
//
// The kernel's word only: SO_PEERCRED (pid, uid, gid as of connect()) and,
// where the kernel has it (6.5+), SO_PEERPIDFD, which pins that process so
// its /proc entry is read for the same process and not a reused pid.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::supervisor::serve {

struct Peer {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  UniqueFd pidfd;  // invalid where SO_PEERPIDFD is missing
};

Result<Peer> peerOf(int connection);

// The supervise session cgroup (`supervise-<12 hex>`, session.cpp) that the
// process of `proc_cgroup` (a /proc/PID/cgroup text) runs in and the daemon
// (`own_cgroup`, its own /proc/self/cgroup) does not: "" when none. A command
// under supervision never reaches the daemon, whatever route led its connect
// to the socket (a symlink, a bind mount, an fd passed in).
std::string supervisedSessionOf(std::string_view proc_cgroup, std::string_view own_cgroup);

// supervisedSessionOf() for a live peer: reads its /proc/PID/cgroup and, with
// a pidfd, checks afterwards that the pid still names that process. An
// unreadable or vanished peer is treated as supervised (refused).
std::string supervisedSessionOfPeer(const Peer& peer);

}  // namespace sv::supervisor::serve
