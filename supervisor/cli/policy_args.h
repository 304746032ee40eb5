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
Result<policy::LoadRequest> makeLoadRequest(const PolicyArgs& args);

// Loads and validates. Diagnostics (errors and warnings) go to *diags; an
// invalid policy is an Error with code 0 and context "invalid policy".
Result<std::shared_ptr<const policy::Policy>> loadPolicy(const PolicyArgs& args,
                                                         std::vector<policy::Diagnostic>* diags);

}  // namespace sv::supervisor
