// Passing an fd over a unix socket (SCM_RIGHTS).
//
// The child installs the seccomp filter and must hand the listener fd to the
// supervisor before exec; a socketpair created before fork is the simplest
// channel that works without ptrace rights (pidfd_getfd needs them).
#pragma once

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::tracer {

// Sends `fd` with one payload byte. Async-signal-safe (stack buffers, sendmsg).
// Returns 0 or -errno.
int sendFdOverSocket(int sock, int fd);

// Receives one fd sent by sendFdOverSocket (blocking). Parent side; the fd is
// made close-on-exec. EPIPE-like ECONNRESET when the peer closed without sending.
Result<UniqueFd> receiveFdOverSocket(int sock);

}  // namespace sv::tracer
