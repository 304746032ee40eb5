// The command's environment: which inherited variables it keeps, and why
// (docs/policy.md, "Environment").
//
// supervise starts with the user's whole environment; tokens in it
// (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, ...) would reach the command and,
// through its output, an agent's model. The policy's `environment` section
// decides each name once, at launch; the built-in credential list below is
// the one documented list (`environment.secrets`, on in every preset). Pure:
// the caller passes the environment in.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/engine.h"
#include "policy/model.h"

namespace sv::policy {

// One built-in credential pattern (environment.secrets).
struct EnvSecretEntry {
  std::string_view id;       // "env-secret:github-token"
  std::string_view pattern;  // "GITHUB_TOKEN", "*_TOKEN"
  std::string_view reason;
};
const std::vector<EnvSecretEntry>& envSecrets();

// Ids of the rules that decide a name no entry matches, and of `set`.
inline constexpr std::string_view kEnvDefaultKeep = "default-keep-env";
inline constexpr std::string_view kEnvDefaultStrip = "default-strip-env";

// Whether `pattern` (environment.allow / deny syntax) matches the whole `name`.
bool envNameMatches(std::string_view pattern, std::string_view name);

// The verdict on one variable: Allow = the command gets it, Deny = stripped.
// A `set` name is always Allow (rule "environment.set:NAME"). With `chain`,
// every rule considered is recorded (explain). Views into `rules`.
Decision decideEnv(const EnvironmentRules& rules, std::string_view name,
                   std::vector<Step>* chain = nullptr);

// `supervise explain env NAME`: the decision, the chain and, for a stripped
// name, the policy edit that keeps it.
Explanation explainEnv(const Policy& policy, std::string_view name);

struct EnvRemoval {
  std::string name;
  std::string rule_id;
  std::string reason;
};

struct EnvFilterResult {
  std::vector<std::string> env;      // NAME=value entries for the command's execve
  std::vector<EnvRemoval> removed;   // in audit mode: what would have been removed
  std::vector<std::string> set;      // the names environment.set gave
  bool applied = true;               // false in audit mode: nothing was stripped
};

// Filters `env` (NAME=value entries, as in environ) by the policy. In audit
// mode nothing is stripped but `removed` still says what would be; `set` is
// applied in both modes (it is configuration, not a restriction). An entry
// without '=' is decided on its whole text.
EnvFilterResult filterEnvironment(const Policy& policy, const std::vector<std::string>& env);

}  // namespace sv::policy
