// The built-in credential-name list and the environment decision (see
// env_rules.h and docs/policy.md, "Environment").
//
// Patterns match the whole name, so `*_TOKEN` strips GITLAB_TOKEN but not
// TOKENIZERS_PARALLELISM, and there is no `*_KEY` (GPG_KEY is a key id,
// SSH_KEY_PATH a path). Exact names come before the generic patterns so a
// well-known variable is explained by its own reason. KUBECONFIG is kept: a
// path is no secret, and the file it names is filesystem.secrets' business
// (~/.kube); GOOGLE_APPLICATION_CREDENTIALS, a path too, goes with
// `*_CREDENTIALS*`, which costs a tool in the tree nothing it may read anyway.
#include "policy/env_rules.h"

#include "policy/glob.h"

namespace sv::policy {
namespace {

constexpr std::string_view kReasonDefaultKeep =
    "no environment.deny pattern matches (environment.mode denylist keeps the rest)";
constexpr std::string_view kReasonDefaultStrip =
    "no environment.allow pattern matches (environment.mode allowlist strips the rest)";
constexpr std::string_view kNameDefaultKeep = "default: environment.mode denylist";
constexpr std::string_view kNameDefaultStrip = "default: environment.mode allowlist";
constexpr std::string_view kReasonSet = "environment.set gives it a fixed value";

const EnvRule* firstEnvMatch(const std::vector<EnvRule>& rules, std::string_view name,
                             std::vector<Step>* chain, std::string_view what) {
  for (const auto& r : rules) {
    const bool m = envNameMatches(r.pattern, name);
    if (chain)
      chain->push_back({r.id, std::string(what) + " " + r.pattern + (m ? " matches" : " does not match"), m});
    if (m) return &r;
  }
  return nullptr;
}

std::string_view nameOf(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

}  // namespace

const std::vector<EnvSecretEntry>& envSecrets() {
  static const std::vector<EnvSecretEntry> kSecrets = {
      {"env-secret:aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", "AWS secret access key"},
      {"env-secret:aws-session-token", "AWS_SESSION_TOKEN", "AWS temporary credentials"},
      {"env-secret:github-token", "GITHUB_TOKEN", "GitHub token"},
      {"env-secret:gh-token", "GH_TOKEN", "GitHub CLI token"},
      {"env-secret:gitlab-token", "GITLAB_TOKEN", "GitLab token"},
      {"env-secret:npm-token", "NPM_TOKEN", "npm registry token"},
      {"env-secret:pypi-token", "PYPI_TOKEN", "PyPI upload token"},
      {"env-secret:openai-api-key", "OPENAI_API_KEY", "OpenAI API key"},
      {"env-secret:anthropic-api-key", "ANTHROPIC_API_KEY", "Anthropic API key"},
      {"env-secret:hf-token", "HF_TOKEN", "Hugging Face token"},
      {"env-secret:docker-password", "DOCKER_PASSWORD", "container registry password"},
      {"env-secret:ssh-auth-sock", "SSH_AUTH_SOCK",
       "the ssh agent's socket signs with every key the agent holds"},
      {"env-secret:gpg-agent-info", "GPG_AGENT_INFO",
       "the gpg agent's socket signs and decrypts with every key it holds"},
      {"env-secret:database-url", "DATABASE_URL", "a database URL carries its password"},
      {"env-secret:database-url-suffix", "*_DATABASE_URL", "a database URL carries its password"},
      {"env-secret:dsn", "*_DSN", "a DSN carries its credentials (SENTRY_DSN, ...)"},
      {"env-secret:token", "*_TOKEN", "looks like a token"},
      {"env-secret:secret", "*_SECRET", "looks like a secret"},
      {"env-secret:secret-part", "*_SECRET_*", "looks like a secret"},
      {"env-secret:secret-prefix", "SECRET_*", "looks like a secret (SECRET_KEY, SECRET_KEY_BASE)"},
      {"env-secret:password", "*_PASSWORD", "looks like a password"},
      {"env-secret:passwd", "*_PASSWD", "looks like a password"},
      {"env-secret:api-key", "*_API_KEY", "looks like an API key"},
      {"env-secret:apikey", "*_APIKEY", "looks like an API key"},
      {"env-secret:access-key", "*_ACCESS_KEY*", "looks like an access key (AWS_ACCESS_KEY_ID, ...)"},
      {"env-secret:private-key", "*_PRIVATE_KEY*", "looks like a private key"},
      {"env-secret:credentials", "*_CREDENTIALS*", "looks like credentials"},
  };
  return kSecrets;
}

bool envNameMatches(std::string_view pattern, std::string_view name) {
  return Glob::matchComponent(pattern, name);
}

Decision decideEnv(const EnvironmentRules& rules, std::string_view name,
                   std::vector<Step>* chain) {
  for (const auto& s : rules.set) {
    if (s.name != name) continue;
    if (chain) chain->push_back({s.id, "environment.set " + s.name + " gives it a fixed value", true});
    return {Verdict::Allow, s.id, kReasonSet, "environment.set"};
  }
  if (auto* r = firstEnvMatch(rules.allow, name, chain, "environment.allow"))
    return {Verdict::Allow, r->id, r->reason, r->name};
  if (auto* r = firstEnvMatch(rules.deny, name, chain, "environment.deny"))
    return {Verdict::Deny, r->id, r->reason, r->name};
  if (rules.mode == EnvMode::Allowlist) {
    if (chain) chain->push_back({std::string(kEnvDefaultStrip), "no allow pattern matches", true});
    return {Verdict::Deny, kEnvDefaultStrip, kReasonDefaultStrip, kNameDefaultStrip};
  }
  if (chain) chain->push_back({std::string(kEnvDefaultKeep), "no deny pattern matches", true});
  return {Verdict::Allow, kEnvDefaultKeep, kReasonDefaultKeep, kNameDefaultKeep};
}

Explanation explainEnv(const Policy& policy, std::string_view name) {
  Explanation e;
  e.decision = decideEnv(policy.environment, name, &e.chain);
  if (e.decision.verdict == Verdict::Deny) {
    e.suggestion = "keep it: add {\"environment\": {\"allow\": [\"" + std::string(name) +
                   "\"]}} to your policy, or run with -o environment.allow+=" + std::string(name);
  }
  return e;
}

EnvFilterResult filterEnvironment(const Policy& policy, const std::vector<std::string>& env) {
  EnvFilterResult out;
  const EnvironmentRules& rules = policy.environment;
  out.applied = policy.mode != Mode::Audit;
  auto isSet = [&](std::string_view name) {
    for (const auto& s : rules.set)
      if (s.name == name) return true;
    return false;
  };
  for (const auto& entry : env) {
    const std::string_view name = nameOf(entry);
    if (isSet(name)) continue;  // replaced below
    const Decision d = decideEnv(rules, name);
    if (d.verdict == Verdict::Deny) {
      out.removed.push_back({std::string(name), std::string(d.rule_id), std::string(d.reason)});
      if (out.applied) continue;
    }
    out.env.push_back(entry);
  }
  for (const auto& s : rules.set) {
    out.env.push_back(s.name + "=" + s.value);
    out.set.push_back(s.name);
  }
  return out;
}

}  // namespace sv::policy
