// printDenial(): the one line on stderr that every backend prints for a
// denial, so an agent (or a person) reads it as a policy decision:
//
//   supervise: denied write to .env (rule deny-write-env: secrets stay out ...)
//
// Built in a stack buffer and written with one write(2): no allocation on the
// decision path, and lines from several threads never interleave.
#pragma once

#include <string_view>

namespace sv::supervisor {

// `action` is "denied", "would deny", "killed"...; `what` the verb and its
// object ("write to .env", "connect to 10.0.0.1:443"); `reason` may be empty.
void printDenial(std::string_view action, std::string_view verb, std::string_view target,
                 std::string_view rule_id, std::string_view reason);

// `path` relative to `workspace` when it lies below it, else unchanged.
std::string_view relativeToWorkspace(std::string_view path, std::string_view workspace);

}  // namespace sv::supervisor
