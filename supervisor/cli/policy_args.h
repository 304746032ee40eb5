// PolicyArgs: the policy-selection flags shared by `supervise` (run),
// `explain` and `validate`, and the one function that turns them into a
// loaded Policy.
//
// This is the impure edge of the policy library: it reads the policy file,
// the SUPERVISE_* environment, the cwd and $HOME, then calls policy::load().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/load.h"
#include "policy/model.h"

namespace CLI {
class App;
}

namespace sv::supervisor {

struct PolicyArgs {
  std::string policy_file;  // --policy/-p FILE ("" = preset only)
  std::string preset;       // --preset P ("" = SUPERVISE_PRESET or code-sandbox)
  std::string workspace;    // --workspace DIR ("" = cwd)
  std::vector<std::string> overrides;  // -o/--set key=value, repeatable
  // The run's --audit-file paths (run: its own flag; explain: the file
  // EVENT_ID is in): self-protected like the policy's file sinks. Not a flag
  // of its own: each command adds the option it has.
  std::vector<std::string> audit_files;
  // `supervise serve`: its socket, whose directory is self-protected too
  // (docs/serve.md): no command may replace the socket or reach the daemon.
  std::string daemon_socket;

  void addTo(CLI::App& app);
};

// Policies are a few KiB; a bigger file is a mistake (or /dev/zero).
inline constexpr size_t kMaxPolicyFileBytes = 1u << 20;

// Reads a whole file of at most kMaxPolicyFileBytes. Error carries errno
// (EFBIG beyond the limit) and "read policy file <path>".
Result<std::string> readTextFile(const std::string& path);

// The SUPERVISE_* variables of this process's environment.
std::map<std::string, std::string> superviseEnv();

// Builds the LoadRequest for `args` (reads the file, env, cwd and $HOME).
// Its self_protect list (docs/policy.md, "Self-protection") holds what only
// the host knows: the policy file, the audit files of `args`, this binary
// (/proc/self/exe), the BPF pins (/sys/fs/bpf/supervise) and the runtime
// state (/run/supervise), each as written (absolute) and, when a symlink is
// on the way, as the physical path the supervisor resolves a call to.
Result<policy::LoadRequest> makeLoadRequest(const PolicyArgs& args);

// Where supervise keeps state a tree must not touch (see makeLoadRequest).
inline constexpr char kBpfPinDir[] = "/sys/fs/bpf/supervise";
inline constexpr char kRuntimeStateDir[] = "/run/supervise";

// Loads and validates. Diagnostics (errors and warnings) go to *diags; an
// invalid policy is an Error with code 0 and context "invalid policy".
Result<std::shared_ptr<const policy::Policy>> loadPolicy(const PolicyArgs& args,
                                                         std::vector<policy::Diagnostic>* diags);

}  // namespace sv::supervisor
