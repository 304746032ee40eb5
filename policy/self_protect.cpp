// selfProtection(): the rules that keep the session's own files out of the
// tree's reach (see SelfProtection in model.h, docs/policy.md
// "Self-protection").
//
// Pure like the rest of policy/: the caller (supervisor/cli) knows the paths
// that need the host to find (the binary, the policy files, --audit-file) and
// passes them in; what the policy itself names (file sinks, spools) is
// derived here, so `explain` and `run` agree on them.
#include <set>

#include "policy/load.h"
#include "policy/path.h"

namespace sv::policy {
namespace {

struct Builder {
  SelfProtection out;
  std::set<std::pair<std::string, bool>> seen;  // (pattern, read)

  void add(const std::string& what, const std::string& pattern, const std::string& shown,
           const std::string& reason, bool read) {
    for (bool r : {false, true}) {
      if (r && !read) continue;
      if (!seen.insert({pattern, r}).second) continue;
      PathRule rule;
      rule.id = "self-protect:" + what;
      rule.reason = reason.empty() ? selfProtectReason(what) : reason;
      rule.pattern = shown;
      // No path in the name: several rules share an id (an audit file and its
      // rotations), and backends that learn only the id (the BPF LSM) look
      // the name up by it (Engine::ruleText). The event's path says which.
      rule.name = "self-protection: " + what;
      rule.origin = {"self-protect", 0, 0};
      std::string err;
      if (!Glob::compile(pattern, &rule.glob, &err, nullptr, /*prefix=*/true)) continue;
      (r ? out.deny_read : out.deny_write).push_back(std::move(rule));
    }
  }
  void addPath(const SelfProtectPath& p) {
    if (p.path.empty() || p.path.front() != '/') return;
    const std::string path = normalizePath("/", p.path);
    add(p.what, escapeGlob(path), path, p.reason, p.read);
  }
};

}  // namespace

std::string selfProtectReason(std::string_view what) {
  if (what == "audit-file") return "the audit trail is out of the tree's reach";
  if (what == "audit-spool") return "the audit spool is out of the tree's reach";
  if (what == "policy-file")
    return "the policy in effect is out of the tree's reach: the next session must not run "
           "under a policy the tree wrote";
  if (what == "binary") return "the supervise binary is out of the tree's reach";
  if (what == "bpf-pins") return "supervise's BPF pins are out of the tree's reach";
  if (what == "runtime-state") return "supervise's runtime state is out of the tree's reach";
  if (what == "daemon-socket")
    return "the exec daemon's socket is out of the tree's reach: a command must neither "
           "replace it nor start commands outside its own session";
  if (what == "process-memory")
    return "process memory is not written through /proc/PID/mem: it would write read-only "
           "pages (code, the ptrace backend's scratch region)";
  return "supervise's own files are out of the tree's reach";
}

SelfProtection selfProtection(const Policy& policy, const std::vector<SelfProtectPath>& extra) {
  Builder b;
  for (const auto& p : extra) b.addPath(p);
  // /proc/PID/mem writes pages the mappings forbid (code, and the ptrace
  // backend's read-only scratch region, tracer/ptrace/scratch.h): no
  // backend lets the tree write process memory that way, whatever its roots.
  for (const char* mem : {"/proc/*/mem", "/proc/*/task/*/mem"})
    b.add("process-memory", mem, mem, "", false);
  for (const auto& sink : policy.audit.sinks) {
    if (sink.type == "file" && !sink.path.empty()) {
      b.addPath({"audit-file", sink.path, "", false});
      // Rotation (supervisor/audit/sinks: PATH.1 .. PATH.<maxFiles-1>).
      if (sink.max_size_mb > 0)
        for (int k = 1; k < sink.max_files; ++k)
          b.addPath({"audit-file", sink.path + "." + std::to_string(k), "", false});
    } else if (sink.type == "syslog" || sink.type == "kafka" || sink.type == "otlp") {
      // The spool is an O_TMPFILE (no name at all); where the file system has
      // none, the named fallback supervise-spool-XXXXXX (spool.cpp).
      const std::string dir = normalizePath("/", sink.spool_dir.empty() ? "/var/tmp" : sink.spool_dir);
      const std::string pattern = escapeGlob(dir == "/" ? "" : dir) + "/supervise-spool-*";
      b.add("audit-spool", pattern, (dir == "/" ? "" : dir) + "/supervise-spool-*", "", false);
    }
  }
  return std::move(b.out);
}

}  // namespace sv::policy
