// The exec daemon's wire protocol (docs/serve.md, "Protocol").
//
// One unix stream socket per command. Every message is a frame: a 4-byte
// little-endian length, then that many bytes of one JSON object with a
// "type". The client's first frame is the request ("exec"), sent with its
// stdin, stdout and stderr as SCM_RIGHTS; later client frames are "signal".
// The daemon answers "started" (or "error") and, at the end, "exit".
//
// Decoding is strict: an unknown key, a wrong type, a NUL inside a string,
// a frame over its cap are errors that name the field, never ignored. Pure
// (no fds, no syscalls): fuzzed by tests/fuzz/serve_fuzz.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace sv::supervisor::serve {

inline constexpr int kProtocolVersion = 1;
// A request carries argv and environment: the kernel takes at most ~2 MiB of
// both at execve, so a larger frame is no command that could run.
inline constexpr size_t kMaxRequestBytes = 4u << 20;
// Every other frame is a few dozen bytes.
inline constexpr size_t kMaxControlBytes = 4u << 10;
// The longest --timeout (a week): past it a number is a mistake.
inline constexpr uint64_t kMaxTimeoutMs = 7ull * 24 * 3600 * 1000;

struct ExecRequest {
  std::vector<std::string> argv;                          // non-empty
  std::string cwd;                                        // absolute
  std::vector<std::pair<std::string, std::string>> env;   // forwarded: NAME, VALUE
  std::string profile;                                    // "" = the base policy
  uint64_t timeout_ms = 0;                                // 0 = none
  uint32_t umask = 022;                                   // the client's umask
};

// What the daemon sends. `type` decides which fields mean something.
struct Reply {
  std::string type;  // "started" | "exit" | "error"
  // started: also the policy the command runs under (the daemon's, which a
  // reload may have changed since the client last asked)
  std::string command_id, session_id;
  std::string policy_name, policy_sha256;
  // exit: the status `supervise exec` exits with (the same codes as
  // `supervise --`), the signal that ended the command (0: none), and
  // whether the daemon killed it for --timeout.
  int status = 0;
  int signal = 0;
  bool timed_out = false;
  // error: why the request was refused; `status` is the exit code to use.
  std::string message;
};

// The daemon to one of its ready session runners (runner.h): a client's
// request, who sent it and the command's id. Never from a client.
struct HandOff {
  ExecRequest request;
  std::string command_id;
  int client_pid = -1;
  int64_t client_uid = -1;
};

// Frames: the 4-byte length prefix and the JSON body.
std::string frame(std::string_view body);
std::string encodeRequest(const ExecRequest& request);
std::string encodeSignal(int signo);
std::string encodeReply(const Reply& reply);
std::string encodeHandOff(const HandOff& handoff);

// A decoded client frame: the request, or a signal to forward.
struct ClientMessage {
  std::optional<ExecRequest> exec;
  int signal = 0;
};
Result<ClientMessage> decodeClientMessage(std::string_view body);
Result<Reply> decodeReply(std::string_view body);
Result<HandOff> decodeHandOff(std::string_view body);

// Splits a byte stream into frame bodies. feed() appends what was read;
// next() returns a complete body, nothing yet, or an error for a frame over
// `max_bytes` (the stream is then unusable).
class FrameReader {
 public:
  explicit FrameReader(size_t max_bytes) : max_bytes_(max_bytes) {}
  void setMax(size_t max_bytes) { max_bytes_ = max_bytes; }
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  Result<std::optional<std::string>> next();
  size_t buffered() const { return buffer_.size(); }

 private:
  size_t max_bytes_;
  std::string buffer_;
};

}  // namespace sv::supervisor::serve
