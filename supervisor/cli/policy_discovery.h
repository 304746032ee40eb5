// Policy discovery: which policy file applies here, and the policy
// `supervise` would run with (discovery applied to the policy flags, then
// loadPolicy()). Every subcommand that decides or reports under "the policy in
// effect" (run, explain, check, status, doctor, policy learn) loads it through
// loadEffectivePolicy(), so they cannot disagree about which file applies.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/load.h"
#include "policy/model.h"
#include "supervisor/cli/policy_args.h"

namespace sv::supervisor {

struct DiscoveryInput {
  std::string explicit_file;    // --policy ("" when not given)
  std::string cwd;              // where ./.supervise.json is looked up
  std::string xdg_config_home;  // $XDG_CONFIG_HOME (ignored unless absolute)
  std::string home;             // $HOME, for the ~/.config default
  std::string etc_dir = "/etc";
};

// The environment's inputs: getcwd(), $XDG_CONFIG_HOME, $HOME (or the passwd
// entry).
DiscoveryInput discoveryFromEnvironment(const std::string &explicit_file);

// The policy file that applies, first match wins: explicit_file, then
// <cwd>/.supervise.json, then <xdg or home/.config>/supervise/policy.json,
// then <etc>/supervise/policy.json; "" means the default preset alone. An
// explicit file is returned even if it does not exist (loading reports it).
// *source, when given, names the rule that won ("--policy",
// "./.supervise.json", "$XDG_CONFIG_HOME/supervise/policy.json",
// "/etc/supervise/policy.json", "default preset").
std::string discoverPolicyFile(const DiscoveryInput &in, std::string *source = nullptr);

struct PolicySummary {
  std::string name;    // Policy::name
  std::string preset;  // the base preset in effect
  std::string file;    // discovered policy file, "" when none
  std::string source;  // discoverPolicyFile()'s *source
};

// The policy `supervise` would run with here: discovery applied to args, then
// loadPolicy(). Diagnostics go to *diags (see loadPolicy()).
struct EffectivePolicy {
  std::shared_ptr<const policy::Policy> policy;
  PolicySummary summary;
};
Result<EffectivePolicy> loadEffectivePolicy(PolicyArgs args,
                                            std::vector<policy::Diagnostic> *diags);
// loadEffectivePolicy() for a command line: prints the diagnostics, and the
// error when there are none, on stderr ("supervise <command>: ..."); nullopt
// when there is no usable policy.
std::optional<EffectivePolicy> loadEffectivePolicyOrReport(const PolicyArgs &args,
                                                           const std::string &command);

}  // namespace sv::supervisor
