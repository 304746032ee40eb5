// Transports over local descriptors: an inherited fd / stdout / pipe, and a
// file with size-based rotation and reopen on SIGHUP.
//
// Non-blocking without side effects: O_NONBLOCK is a property of the open file
// description, which a pipe or terminal shares with the supervised command
// (stdout!). So a pipe/FIFO/tty is reopened through /proc/self/fd/N to get a
// description of our own, and sockets use send(MSG_DONTWAIT). Regular files
// are written directly (O_APPEND). SIGPIPE from a reader that went away is
// blocked and consumed around the write, so the caller need not ignore it.
//
// Rotation (file sinks with max_bytes > 0): the file never grows past
// max_bytes except by one record longer than that; records are never split
// (JSON lines: a write is cut at the last '\n' that fits). path.N-1 is
// removed, path.K becomes path.K+1, path becomes path.1, a new path is opened.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "supervisor/audit/sinks/transport.h"

namespace sv::supervisor::audit {

struct FileRotation {
  uint64_t max_bytes = 0;  // 0: never rotate
  int max_files = 5;       // files in all, the live one included (>= 1)
};

// O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0600. A FIFO or socket at the path
// is written like an fd (no rotation).
Result<std::unique_ptr<Transport>> openFileTransport(const std::string& path,
                                                     FileRotation rotation = {});
// An inherited or dup'ed descriptor. `shared_with_command`: the description is
// the command's too (stdout), so its O_NONBLOCK flag is never touched.
Result<std::unique_ptr<Transport>> openFdTransport(std::string name, UniqueFd fd,
                                                   bool shared_with_command);

}  // namespace sv::supervisor::audit
