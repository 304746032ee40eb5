// Doctor and status output (see doctor_report.h).
#include "supervisor/cli/doctor_report.h"

#include <cstdarg>
#include <cstdio>

#include "policy/env_rules.h"

extern char** environ;

namespace sv::supervisor {
namespace {

using policy::NetworkMode;

const char *modeName(policy::Mode m) { return m == policy::Mode::Audit ? "audit" : "enforce"; }
const char *fallbackName(policy::Fallback f) {
  return f == policy::Fallback::UnsafeHostProcess ? "unsafe-host-process" : "fail-closed";
}
const char *networkName(NetworkMode m) {
  switch (m) {
    case NetworkMode::None:
      return "none";
    case NetworkMode::Localhost:
      return "localhost";
    case NetworkMode::Allowlist:
      return "allowlist";
    case NetworkMode::All:
      return "all";
  }
  return "all";
}

std::string policyLine(const PolicySummary &s) {
  std::string out = "preset " + s.preset;
  if (!s.file.empty()) out += " + " + s.file;
  return out + " (from " + s.source + ")";
}

void appendf(std::string &out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string &out, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

void appendRows(std::string &out, const std::vector<FeatureRow> &rows) {
  for (const auto &r : rows) {
    const char *mark = r.enforceable ? "ok" : (r.used ? "MISSING" : "missing");
    appendf(out, "  %-8s %-26s %-6s %-28s %s\n", mark, r.label.c_str(), r.used ? "used" : "-",
            r.backend.empty() ? "cannot be enforced" : r.backend.c_str(), r.detail.c_str());
  }
}

std::string verdictLine(const PolicySummary &s, const std::vector<FeatureRow> &rows) {
  if (fullyEnforceable(rows)) return "policy " + s.name + " is fully enforceable on this host\n";
  std::string out = "policy " + s.name + " is NOT fully enforceable on this host:";
  for (const auto &r : rows)
    if (r.used && !r.enforceable) out += "\n  " + r.label + ": " + r.detail;
  return out + "\n";
}

// The rules filesystem.toolchains / caches / secrets derived here
// (policy/home_rules.h): the roots, the secrets that exist, what was left out.
std::string homeRulesText(const policy::Policy &p) {
  std::string out;
  auto list = [&](const std::vector<policy::PathRule> &rules, const char *what, bool present) {
    for (const auto &r : rules)
      if (r.origin.derived() && (!present || !r.absent_at_load))
        appendf(out, "  %-8s %-30s %s\n", what, r.id.c_str(), r.pattern.c_str());
  };
  list(p.filesystem.readable_roots, "read+x", false);
  list(p.filesystem.writable_roots, "write", false);
  list(p.filesystem.deny_read, "closed", true);
  for (const auto &n : p.home_notes) appendf(out, "  %-8s %s\n", "skipped", n.c_str());
  if (out.empty()) return "";
  return "\nhome (filesystem.toolchains, caches, secrets; derived from this environment)\n" + out;
}

// What environment.* would strip from this environment (names, never values).
policy::EnvFilterResult currentEnvFilter(const policy::Policy &p) {
  std::vector<std::string> env;
  for (char **e = environ; e && *e; ++e) env.emplace_back(*e);
  return policy::filterEnvironment(p, env);
}

std::string environmentText(const policy::Policy &p) {
  const policy::EnvFilterResult f = currentEnvFilter(p);
  if (f.removed.empty()) return "";
  std::string out = std::string("\nenvironment (") + (f.applied ? "stripped" : "would strip") +
                    " from this environment; explain env NAME says why)\n";
  for (const auto &r : f.removed) appendf(out, "  %-30s %s\n", r.name.c_str(), r.rule_id.c_str());
  return out;
}

nlohmann::json environmentJson(const policy::Policy &p) {
  const policy::EnvFilterResult f = currentEnvFilter(p);
  nlohmann::json removed = nlohmann::json::array();
  for (const auto &r : f.removed) removed.push_back({{"name", r.name}, {"rule", r.rule_id}});
  return {{"applied", f.applied}, {"removed", removed}, {"set", f.set}};
}

nlohmann::json homeRulesJson(const policy::Policy &p) {
  auto list = [](const std::vector<policy::PathRule> &rules, bool present) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto &r : rules)
      if (r.origin.derived() && (!present || !r.absent_at_load))
        out.push_back({{"id", r.id}, {"path", r.pattern}, {"reason", r.reason}});
    return out;
  };
  return {{"toolchains", list(p.filesystem.readable_roots, false)},
          {"caches", list(p.filesystem.writable_roots, false)},
          {"secrets_present", list(p.filesystem.deny_read, true)},
          {"skipped", p.home_notes}};
}

}  // namespace

nlohmann::json doctorJson(const HostReport &host, const PolicySummary &s, const policy::Policy &p,
                          const std::vector<FeatureRow> &rows) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto &c : host.checks)
    checks.push_back({{"id", c.id},
                      {"label", c.label.substr(c.label.find_first_not_of(' '))},
                      {"status", std::string(toString(c.state))},
                      {"value", c.value},
                      {"detail", c.detail}});
  const nlohmann::json features = featureRowsJson(rows);
  const HostCaps &c = host.caps;
  return {{"schema_version", 1},
          {"host",
           {{"seccomp_notify", c.seccomp_notify},
            {"notify_addfd", c.notify_addfd},
            {"notify_sync_wakeup", c.notify_sync_wakeup},
            {"landlock_abi", c.landlock_abi},
            {"landlock_fs_rights", host.landlock_fs_rights},
            {"landlock_net_rights", host.landlock_net_rights},
            {"landlock_scopes", host.landlock_scopes},
            {"cgroup2", c.cgroup2},
            {"cgroup2_mount", c.cgroup2_mount},
            {"cgroup2_mounted_by_supervise", c.cgroup2_by_supervise},
            {"cgroup_writable", c.cgroup_writable},
            {"cgroup_kill", c.cgroup_kill},
            {"cgroup_sock_addr", c.cgroup_sock_addr},
            {"cgroup_unix_hooks", c.cgroup_unix_hooks},
            {"bpf_ringbuf", c.bpf_ringbuf},
            {"bpf_tracepoint", c.bpf_tracepoint},
            {"bpf_lsm_active", c.bpf_lsm_active},
            {"bpf_lsm_loadable", c.bpf_lsm_loadable},
            {"bpf_lsm_path_hooks", c.bpf_lsm_path_hooks},
            {"lsms", host.lsms}}},
          {"checks", checks},
          {"policy",
           {{"name", s.name},
            {"preset", s.preset},
            {"file", s.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.file)},
            {"source", s.source},
            {"mode", modeName(p.mode)},
            {"fallback", fallbackName(p.fallback)},
            {"network", networkName(p.network.mode.value_or(NetworkMode::All))}}},
          {"home", homeRulesJson(p)},
          {"environment", environmentJson(p)},
          {"features", features},
          {"fully_enforceable", fullyEnforceable(rows)}};
}

std::string doctorText(const HostReport &host, const PolicySummary &s, const policy::Policy &p,
                       const std::vector<FeatureRow> &rows) {
  std::string out = "host\n";
  for (const auto &c : host.checks) {
    appendf(out, "  %-8s %-28s %-24s %s\n", std::string(toString(c.state)).c_str(), c.label.c_str(),
            c.value.c_str(), c.detail.c_str());
  }
  out += "\npolicy: " + policyLine(s) + "\n";
  appendRows(out, rows);
  out += homeRulesText(p) + environmentText(p);
  return out + "\n" + verdictLine(s, rows);
}

std::string statusText(const PolicySummary &s, const policy::Policy &p,
                       const std::vector<FeatureRow> &rows) {
  std::string out;
  appendf(out, "%-10s %s\n", "policy", s.name.c_str());
  appendf(out, "%-10s %s\n", "preset", s.preset.c_str());
  appendf(out, "%-10s %s\n", "file", s.file.empty() ? "(none)" : s.file.c_str());
  appendf(out,
          "%-10s %s (order: --policy, ./.supervise.json, "
          "$XDG_CONFIG_HOME/supervise/policy.json, /etc/supervise/policy.json, "
          "default preset)\n",
          "source", s.source.c_str());
  appendf(out, "%-10s %s\n", "workspace", p.workspace.c_str());
  appendf(out, "%-10s %s\n", "mode", modeName(p.mode));
  appendf(out, "%-10s %s\n", "fallback", fallbackName(p.fallback));
  appendf(out, "%-10s %s\n", "network", networkName(p.network.mode.value_or(NetworkMode::All)));
  out += "engines\n";
  appendRows(out, rows);
  out += homeRulesText(p) + environmentText(p);
  return out + verdictLine(s, rows);
}

}  // namespace sv::supervisor
