// printDenial(): the one line on stderr that every backend prints for a
// denial, so an agent (or a person) reads it as a policy decision:
//
//   supervise: denied write to .env (rule deny-write-env: secrets ...) [event 3f2a9c1b:12]
//
// The event id is the audit event of that denial (SESSION:SEQ, the session
// id's first 8 digits): `supervise explain --audit-file TRAIL 3f2a9c1b:12`
// answers which rule decided it and how to change that.
//
// Built in a stack buffer and written with one write(2): no allocation on the
// decision path, and lines from several threads never interleave.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sv::supervisor {

// The audit event a denial line names: its session and seq (0: none).
struct EventRef {
  std::string_view session_id;
  uint64_t seq = 0;
};

// `action` is "denied", "would deny", "killed"...; `what` the verb and its
// object ("write to .env", "connect to 10.0.0.1:443"); `reason` may be empty.
void printDenial(std::string_view action, std::string_view verb, std::string_view target,
                 std::string_view rule_id, std::string_view reason, EventRef event = {});

// The event id as the line shows it and `supervise explain` takes it.
inline constexpr size_t kEventRefSessionDigits = 8;

// `path` relative to `workspace` when it lies below it, else unchanged.
std::string_view relativeToWorkspace(std::string_view path, std::string_view workspace);

}  // namespace sv::supervisor
