// effectivePolicyJson(): see policy_json.h.
#include "supervisor/audit/policy_json.h"

#include "supervisor/audit/sha256.h"

namespace sv::supervisor {
namespace {

using Json = nlohmann::ordered_json;

template <typename Rule>
Json rules(const std::vector<Rule>& list) {
  Json out = Json::array();
  for (const auto& r : list) {
    Json o = {{"id", r.id}, {"pattern", r.pattern}};
    if (!r.reason.empty()) o["reason"] = r.reason;
    out.push_back(std::move(o));
  }
  return out;
}

Json filesystem(const policy::FilesystemRules& f) {
  return {{"readableRoots", rules(f.readable_roots)},
          {"writableRoots", rules(f.writable_roots)},
          {"denyRead", rules(f.deny_read)},
          {"denyWrite", rules(f.deny_write)}};
}

Json exec(const policy::ExecRules& e) {
  Json switches = Json::array();
  for (const auto& s : e.switches)
    switches.push_back({{"id", s.id}, {"match", s.pattern}, {"profile", s.profile}});
  return {{"allow", rules(e.allow)}, {"deny", rules(e.deny)}, {"switch", std::move(switches)}};
}

const char* networkMode(policy::NetworkMode m) {
  switch (m) {
    case policy::NetworkMode::None: return "none";
    case policy::NetworkMode::Localhost: return "localhost";
    case policy::NetworkMode::Allowlist: return "allowlist";
    case policy::NetworkMode::All: return "all";
  }
  return "unknown";
}

Json network(const policy::NetworkRules& n) {
  Json allow = Json::array();
  for (const auto& r : n.allow) allow.push_back({{"id", r.id}, {"spec", r.spec}});
  Json o = Json::object();
  o["mode"] = n.mode ? Json(networkMode(*n.mode)) : Json(nullptr);
  o["allow"] = std::move(allow);
  return o;
}

// Names only for `set`: the policy's values stay out of the audit trail (a
// value may be a credential the user hands the command on purpose).
Json environment(const policy::EnvironmentRules& e) {
  Json set = Json::array();
  for (const auto& s : e.set) set.push_back(s.name);
  return {{"mode", e.mode == policy::EnvMode::Allowlist ? "allowlist" : "denylist"},
          {"allow", rules(e.allow)},
          {"deny", rules(e.deny)},
          {"set", std::move(set)}};
}

const char* auditLevel(policy::AuditLevel l) {
  switch (l) {
    case policy::AuditLevel::Deny: return "deny";
    case policy::AuditLevel::Decisions: return "decisions";
    case policy::AuditLevel::All: return "all";
  }
  return "unknown";
}

}  // namespace

nlohmann::ordered_json effectivePolicyJson(const policy::Policy& p) {
  Json profiles = Json::object();
  for (const auto& [name, prof] : p.profiles) {
    profiles[name] = {{"filesystem", filesystem(prof.filesystem)},
                      {"exec", exec(prof.exec)},
                      {"network", network(prof.network)}};
  }
  Json j = Json::object();
  j["version"] = p.version;
  j["name"] = p.name;
  j["mode"] = p.mode == policy::Mode::Audit ? "audit" : "enforce";
  j["fallback"] =
      p.fallback == policy::Fallback::FailClosed ? "fail-closed" : "unsafe-host-process";
  j["workspace"] = p.workspace;
  j["filesystem"] = filesystem(p.filesystem);
  j["exec"] = exec(p.exec);
  j["network"] = network(p.network);
  j["environment"] = environment(p.environment);
  j["profiles"] = std::move(profiles);
  j["capabilities"] = p.keep_capabilities;
  Json redact = Json::array();
  for (const auto& r : p.audit.redact) redact.push_back(r.pattern);
  j["audit"] = {{"level", auditLevel(p.audit.level)}, {"redact", std::move(redact)}};
  if (p.audit.chain) j["audit"]["chain"] = true;  // absent when off: digests of older policies stay
  return j;
}

std::vector<SelfProtectedPath> selfProtectedPaths(const policy::Policy& p) {
  std::vector<SelfProtectedPath> out;
  for (const auto& r : p.self_protect.deny_write) {
    bool read = false;
    for (const auto& rr : p.self_protect.deny_read) read |= rr.pattern == r.pattern;
    out.push_back({r.id, r.pattern, read ? "read-write" : "write"});
  }
  return out;
}

std::string policyDigest(const policy::Policy& policy) {
  return policyDigest(effectivePolicyJson(policy));
}

std::string effectivePolicyText(const nlohmann::ordered_json& effective) {
  return effective.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string policyDigest(const nlohmann::ordered_json& effective) {
  return sha256Hex(effectivePolicyText(effective));
}

}  // namespace sv::supervisor
