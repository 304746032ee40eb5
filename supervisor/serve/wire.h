// Bytes and fds over the daemon's unix stream socket (SCM_RIGHTS).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::supervisor::serve {

// The most fds one message may carry: the request's stdin, stdout, stderr.
inline constexpr size_t kMaxFdsPerMessage = 3;

// Sends all of `bytes` (blocking), the fds with the first part. MSG_NOSIGNAL:
// a peer that went away is EPIPE, not a signal.
Status sendWithFds(int sock, std::string_view bytes, const std::vector<int>& fds);

// One recvmsg (non-blocking when the socket is): the bytes read (0 at EOF,
// -1 with errno), and the fds that came with them, close-on-exec. More fds
// than kMaxFdsPerMessage, or a cut control message, sets *too_many (the fds
// the kernel delivered are closed).
ssize_t receiveWithFds(int sock, char* buf, size_t size, std::vector<UniqueFd>* fds,
                       bool* too_many);

}  // namespace sv::supervisor::serve
