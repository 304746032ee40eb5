// ECS 8.11 encoding of audit events; see formats.h and docs/audit-events.md.
//
// Only fields that ECS 8.11.0 and the current ECS both define (audit_schema_test
// validates the stream against each); the rest, and the exact bytes of names
// that are not UTF-8, under the custom `supervise` namespace.
#include <cstdio>
#include <string_view>

#include "supervisor/audit/formats/encode_util.h"
#include "supervisor/audit/formats/formats.h"

namespace sv::supervisor {
namespace {

constexpr std::string_view kEcsVersion = "8.11.0";

// event.category (one of ECS's allowed values) and the event.type that
// describes the activity besides allowed/denied (expected for the category).
struct EcsKind {
  std::string_view category;
  std::string_view type;
};

EcsKind kindOf(const AuditEvent& e) {
  const std::string_view op = e.operation;
  if (e.category == "file") {
    if (op == "create" || op == "mkdir" || op == "symlink" || op == "link" || op == "mknod")
      return {"file", "creation"};
    if (op == "unlink" || op == "rmdir") return {"file", "deletion"};
    if (op == "read" || op == "open") return {"file", "access"};
    return {"file", "change"};
  }
  if (e.category == "exec") return {"process", "start"};
  if (e.category == "process") return {"process", "access"};
  if (e.category == "network") return {"network", "connection"};
  return {"process", op == "start" ? "start" : op == "end" ? "end" : "info"};
}

}  // namespace

void encodeEcsTo(std::string& out, const AuditEvent& e, const SessionInfo& session,
                 uint64_t seq, timespec time) {
  JsonWriter w(out);
  EventText text(session.redact);
  ExactBytes exact;
  const EcsKind kind = kindOf(e);
  const bool decision = !e.decision.empty();
  const bool deny = e.decision == "deny";
  const bool is_session = e.category == "session";
  w.beginObject();
  w.key("@timestamp");
  writeTimeMillis(w, time);  // an ECS date holds ms; event.sequence orders within one
  w.key("ecs");
  w.beginObject();
  w.member("version", kEcsVersion);
  w.endObject();

  w.key("event");
  w.beginObject();
  w.member("kind", "event");
  w.key("category");
  w.beginArray();
  w.string(kind.category);
  // ECS expects allowed/denied only for some categories (not file or
  // process): a decision is also an intrusion_detection event, which pairs them.
  if (decision) w.string("intrusion_detection");
  w.endArray();
  w.key("type");
  w.beginArray();
  if (decision) w.string(deny ? "denied" : "allowed");
  w.string(kind.type);
  w.endArray();
  w.key("action");
  if (is_session) {
    w.beginString();
    w.stringPiece("session-");
    w.stringPiece(e.operation);
    w.endString();
  } else {
    w.string(e.operation);
  }
  if (decision) w.member("outcome", deny ? "failure" : "success");
  w.key("id");
  writeEventId(w, session, seq ? "" : "dropped-", seq ? seq : e.session.dropped_first);
  if (seq) {
    w.key("sequence");
    w.unsignedNumber(seq);
  }
  w.member("module", "supervise");
  w.member("dataset", "supervise.audit");
  if (!e.enforced_by.empty()) w.member("provider", e.enforced_by);
  if (!e.rule_reason.empty()) w.member("reason", e.rule_reason);
  w.endObject();

  if (!e.rule_id.empty()) {
    w.key("rule");
    w.beginObject();
    w.member("id", e.rule_id);
    w.member("name", e.rule_name.empty() ? e.rule_id : e.rule_name);
    w.member("description", e.rule_reason);
    w.member("ruleset", session.policy_name);
    if (!session.policy_sha256.empty()) w.member("version", session.policy_sha256);
    w.endObject();
  }
  if (e.process) {
    const ProcessInfo& p = *e.process;
    w.key("process");
    w.beginObject();
    w.memberNumber("pid", p.pid);
    w.key("thread");
    w.beginObject();
    w.memberNumber("id", p.tid);
    w.endObject();
    // An exec event describes the process as it starts: same pid, new image.
    const bool exec = e.category == "exec";
    const auto& argv = exec ? e.exec.argv : p.argv;
    const std::string_view executable = text.path(exec ? e.exec.path : p.exe);
    exact.put(w, "name", "process.name", exec ? baseName(executable) : std::string_view(p.comm));
    exact.put(w, "executable", "process.executable", executable);
    exact.putArgv(w, text, "args", "process.args", argv);
    w.memberNumber("args_count", int64_t(argv.size()));  // as run, even when args is cut
    w.key("command_line");
    writeJoined(w, text, argv);
    exact.put(w, "working_directory", "process.working_directory", text.path(p.cwd));
    w.key("user");  // effective: what the kernel checks
    w.beginObject();
    w.key("id");
    writeIdString(w, p.euid);
    w.endObject();
    w.key("real_user");
    w.beginObject();
    w.key("id");
    writeIdString(w, p.uid);
    w.endObject();
    w.key("real_group");  // process.group is the effective group, and only from ECS 8.16
    w.beginObject();
    w.key("id");
    writeIdString(w, p.gid);
    w.endObject();
    w.key("parent");
    w.beginObject();
    w.key("pid");
    p.ppid >= 0 ? w.number(p.ppid) : w.null();
    if (!p.parent_exe.empty())
      exact.put(w, "executable", "process.parent.executable", text.path(p.parent_exe));
    w.endObject();
    w.endObject();
  } else if (e.category == "exec") {
    w.key("process");
    w.beginObject();
    const std::string_view executable = text.path(e.exec.path);
    exact.put(w, "name", "process.name", baseName(executable));
    exact.put(w, "executable", "process.executable", executable);
    exact.putArgv(w, text, "args", "process.args", e.exec.argv);
    w.endObject();
  }
  if (!e.file.path.empty()) {
    const std::string_view path = text.path(e.file.path);
    w.key("file");
    w.beginObject();
    exact.put(w, "path", "file.path", path);
    exact.put(w, "name", "file.name", baseName(path));
    if (!e.file.path2.empty())
      exact.put(w, "target_path", "file.target_path", text.path(e.file.path2));
    if (e.file.mode >= 0) {
      char buf[16];
      w.member("mode", std::string_view(buf, size_t(std::snprintf(buf, sizeof buf, "%04o",
                                                                   unsigned(e.file.mode)))));
    }
    w.endObject();
  }
  const auto& n = e.network;
  if (!n.ip.empty() || n.port >= 0 || !n.unix_path.empty()) {
    w.key("destination");
    w.beginObject();
    if (!n.ip.empty()) {
      w.member("ip", n.ip);
      w.member("address", n.ip);
    } else if (!n.unix_path.empty()) {
      exact.put(w, "address", "destination.address", text.path(n.unix_path));
    }
    if (n.port >= 0) w.memberNumber("port", n.port);
    w.endObject();
    w.key("network");
    w.beginObject();
    if (!n.proto.empty()) w.member("transport", n.proto);
    if (n.family == "inet" || n.family == "inet6") w.member("type", n.family == "inet" ? "ipv4" : "ipv6");
    w.member("direction", "egress");
    w.endObject();
  }
  if (e.err) {
    w.key("error");
    w.beginObject();
    w.key("code");
    writeErrno(w, e.err);
    w.endObject();
  }
  w.key("host");
  w.beginObject();
  exact.put(w, "hostname", "host.hostname", session.host);
  exact.put(w, "name", "host.name", session.host);
  w.key("boot");
  w.beginObject();
  exact.put(w, "id", "host.boot.id", session.boot_id);
  w.endObject();
  w.endObject();
  w.key("agent");
  w.beginObject();
  w.member("type", "supervise");
  exact.put(w, "version", "agent.version", session.agent_version);
  w.endObject();
  w.key("labels");
  w.beginObject();
  exact.put(w, "session_id", "labels.session_id", session.session_id);
  w.endObject();

  // The native fields ECS has no place for, under the native names.
  w.key("supervise");
  w.beginObject();
  writeSchemaMarker(w);
  putString(w, "category", e.category);
  if (decision) putString(w, "decision", e.decision);
  if (e.default_rule) {
    w.key("default_rule");
    w.boolean(true);
  }
  if (!e.syscall.empty() || e.syscall_nr >= 0) {
    w.key("syscall");
    w.beginObject();
    if (!e.syscall.empty()) putString(w, "name", e.syscall);
    if (e.syscall_nr >= 0) w.memberNumber("nr", e.syscall_nr);
    if (!archName(e.arch).empty()) w.member("arch", archName(e.arch));
    w.endObject();
  }
  if (e.file.flags >= 0) {
    w.key("file_flags");
    writeFlagNames(w, e.operation, e.file.flags);
  }
  if (e.process) putString(w, "profile", e.process->profile);
  writeDaemonRequest(w, session);
  writeTarget(w, e);
  writeSessionDetails(w, text, e);
  exact.writeTo(w, text);
  writeTruncated(w, e, text);
  w.endObject();
  w.endObject();
}

}  // namespace sv::supervisor
