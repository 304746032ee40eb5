// OCSF encoding of audit events; see formats.h and docs/audit-events.md.
//
// One stream for OCSF 1.8.0 (declared) and 1.1.0: every attribute written is
// defined, with the same type, by both (audit_schema_test validates the
// stream against each). What only the newer releases define (policy under
// the Security Control profile from 1.4.0, process.ptid from 1.6.0) and what
// neither defines (the exact bytes of names that are not UTF-8) goes under
// `unmapped`.
#include <string_view>

#include "supervisor/audit/formats/encode_util.h"
#include "supervisor/audit/formats/formats.h"

namespace sv::supervisor {
namespace {

constexpr std::string_view kOcsfVersion = "1.8.0";

struct Activity {
  int id;
  std::string_view name;
};

struct OcsfClass {
  int class_uid;
  std::string_view class_name;
  int category_uid;
  std::string_view category_name;
  Activity activity;
};

Activity fileActivity(std::string_view op) {
  if (op == "create" || op == "mkdir" || op == "symlink" || op == "link" || op == "mknod")
    return {1, "Create"};
  if (op == "read") return {2, "Read"};
  if (op == "write" || op == "truncate") return {3, "Update"};
  if (op == "unlink" || op == "rmdir") return {4, "Delete"};
  if (op == "rename") return {5, "Rename"};
  if (op == "setxattr" || op == "utimes") return {6, "Set Attributes"};
  if (op == "chmod" || op == "chown") return {7, "Set Security"};
  if (op == "open") return {14, "Open"};
  return {99, "Other"};
}

OcsfClass classOf(const AuditEvent& e) {
  const std::string_view op = e.operation;
  if (e.category == "file") return {1001, "File System Activity", 1, "System Activity",
                                    fileActivity(op)};
  // category process: the process tracker's execs (the exec re-check's
  // approvals and the process tree's execs) are launches too.
  if (e.category == "exec" || (e.category == "process" && op == "exec"))
    return {1007, "Process Activity", 1, "System Activity", {1, "Launch"}};
  if (e.category == "process") {
    return {1007, "Process Activity", 1, "System Activity",
            op == "ptrace" ? Activity{4, "Inject"} : op == "kill" ? Activity{2, "Terminate"}
                                                                    : Activity{99, "Other"}};
  }
  if (e.category == "network") {
    return {4001, "Network Activity", 4, "Network Activity",
            op == "connect"   ? Activity{1, "Open"}
            : op == "sendmsg" ? Activity{6, "Traffic"}
            : op == "bind" || op == "listen" ? Activity{7, "Listen"}
                                             : Activity{99, "Other"}};
  }
  // Session start/end/dropped: the supervisor's own lifecycle.
  return {6002, "Application Lifecycle", 6, "Application Activity",
          op == "start" ? Activity{3, "Start"} : op == "end" ? Activity{4, "Stop"}
                                                             : Activity{99, "Other"}};
}

// Attribute paths of the strings that may not be UTF-8 (unmapped.b64 keys).
struct FilePaths {
  std::string_view path, name;
};
constexpr FilePaths kActorFile{"actor.process.file.path", "actor.process.file.name"};
constexpr FilePaths kParentFile{"actor.process.parent_process.file.path",
                                "actor.process.parent_process.file.name"};
constexpr FilePaths kTargetFile{"file.path", "file.name"};
constexpr FilePaths kResultFile{"file_result.path", "file_result.name"};
constexpr FilePaths kLaunchedFile{"process.file.path", "process.file.name"};

void writeFileObject(JsonWriter& w, ExactBytes& exact, std::string_view key,
                     const FilePaths& paths, std::string_view path) {
  w.key(key);
  w.beginObject();
  exact.put(w, "path", paths.path, path);
  exact.put(w, "name", paths.name, baseName(path));
  w.memberNumber("type_id", 0);  // the decision is about a name; its type is not looked up
  w.endObject();
}

// No tid: deprecated from 1.6.0 for ptid, which 1.1.0 lacks (unmapped.tid).
// Unknown ids are left out: OCSF has no null.
void writeProcess(JsonWriter& w, EventText& text, ExactBytes& exact, const ProcessInfo& p) {
  w.key("process");
  w.beginObject();
  w.memberNumber("pid", p.pid);
  exact.put(w, "name", "actor.process.name", p.comm);
  w.key("cmd_line");
  writeJoined(w, text, p.argv);
  if (!p.exe.empty()) writeFileObject(w, exact, "file", kActorFile, text.path(p.exe));
  if (p.euid != ProcessInfo::kUnknownId) {
    w.key("user");
    w.beginObject();
    w.key("uid");
    writeIdString(w, p.euid);
    w.endObject();
  }
  if (p.ppid >= 0) {  // a process object needs its pid
    w.key("parent_process");
    w.beginObject();
    w.memberNumber("pid", p.ppid);
    if (!p.parent_exe.empty())
      writeFileObject(w, exact, "file", kParentFile, text.path(p.parent_exe));
    w.endObject();
  }
  w.endObject();
}

}  // namespace

void encodeOcsfTo(std::string& out, const AuditEvent& e, const SessionInfo& session,
                  uint64_t seq, timespec time) {
  JsonWriter w(out);
  EventText text(session.redact);
  ExactBytes exact;
  const OcsfClass c = classOf(e);
  const bool decision = !e.decision.empty();
  const bool deny = e.decision == "deny";
  const bool would_deny = e.decision == "would-deny";
  w.beginObject();
  w.memberNumber("class_uid", c.class_uid);
  w.member("class_name", c.class_name);
  w.memberNumber("category_uid", c.category_uid);
  w.member("category_name", c.category_name);
  w.memberNumber("activity_id", c.activity.id);
  w.member("activity_name", c.activity.name);
  w.memberNumber("type_uid", int64_t(c.class_uid) * 100 + c.activity.id);
  // severity: a blocked action is worth a look, a would-deny less so.
  w.memberNumber("severity_id", deny ? 3 : would_deny ? 2 : 1);
  w.member("severity", deny ? "Medium" : would_deny ? "Low" : "Informational");
  w.memberNumber("time", int64_t(time.tv_sec) * 1000 + time.tv_nsec / 1000000);
  w.key("time_dt");
  writeTime(w, time);
  w.key("metadata");
  w.beginObject();
  w.member("version", kOcsfVersion);
  w.key("uid");
  writeEventId(w, session, seq ? "" : "dropped-", seq ? seq : e.session.dropped_first);
  if (seq) {
    w.key("sequence");
    w.unsignedNumber(seq);
  }
  exact.put(w, "correlation_uid", "metadata.correlation_uid", session.session_id);
  w.key("profiles");
  w.beginArray();
  if (decision) w.string("security_control");
  w.string("host");
  w.string("datetime");  // time_dt
  w.endArray();
  w.key("product");
  w.beginObject();
  w.member("name", "supervise");
  w.member("vendor_name", "supervise");
  exact.put(w, "version", "metadata.product.version", session.agent_version);
  w.endObject();
  w.endObject();
  w.key("device");
  w.beginObject();
  exact.put(w, "hostname", "device.hostname", session.host);
  w.memberNumber("type_id", 0);
  w.endObject();
  if (decision) {
    // Security Control profile: what the control did with the activity.
    w.memberNumber("action_id", deny ? 2 : 1);
    w.member("action", deny ? "Denied" : "Allowed");
    w.memberNumber("disposition_id", deny ? 2 : would_deny ? 15 : 1);
    w.member("disposition", deny ? "Blocked" : would_deny ? "Detected" : "Allowed");
    w.memberNumber("status_id", deny ? 2 : 1);
    w.member("status", deny ? "Failure" : "Success");
    if (e.err) {
      w.key("status_code");
      writeErrno(w, e.err);
    }
    // policy (Security Control from 1.4.0) is in unmapped: 1.1.0 lacks it.
    if (c.class_uid == 4001) {
      w.key("firewall_rule");
      w.beginObject();
      exact.put(w, "uid", "firewall_rule.uid", e.rule_id);
      exact.put(w, "name", "firewall_rule.name", e.rule_name.empty() ? e.rule_id : e.rule_name);
      exact.put(w, "desc", "firewall_rule.desc", e.rule_reason);
      w.endObject();
    }
  }
  // System Activity requires an actor: file and exec decisions always name
  // the caller (only a socket hook's event can lack one).
  if (e.process) {
    w.key("actor");
    w.beginObject();
    writeProcess(w, text, exact, *e.process);
    w.endObject();
  }
  if (c.class_uid == 1001 && !e.file.path.empty())
    writeFileObject(w, exact, "file", kTargetFile, text.path(e.file.path));
  if (c.class_uid == 1001 && !e.file.path2.empty())  // rename/link target
    writeFileObject(w, exact, "file_result", kResultFile, text.path(e.file.path2));
  if (c.class_uid == 1007 && e.operation == "exec") {  // the launched image
    w.key("process");
    w.beginObject();
    if (e.process) w.memberNumber("pid", e.process->pid);
    const std::string_view path = text.path(e.exec.path);
    exact.put(w, "name", "process.name", baseName(path));
    w.key("cmd_line");
    writeJoined(w, text, e.exec.argv);
    writeFileObject(w, exact, "file", kLaunchedFile, path);
    w.endObject();
  }
  if (c.class_uid == 1007 && e.operation != "exec") {
    // The process acted on: a signal's recipient, else the caller itself (a
    // syscall the filter refused, a process it killed).
    w.key("process");
    w.beginObject();
    if (e.target.pid >= 0) {
      w.memberNumber("pid", e.target.pid);
      if (!e.target.comm.empty()) exact.put(w, "name", "process.name", e.target.comm);
    } else if (e.process) {
      w.memberNumber("pid", e.process->pid);
      exact.put(w, "name", "process.name", e.process->comm);
    }
    w.endObject();
  }
  if (c.class_uid == 4001) {
    const auto& n = e.network;
    // The connection starts on this host; its local address is not recorded.
    w.key("src_endpoint");
    w.beginObject();
    exact.put(w, "hostname", "src_endpoint.hostname", session.host);
    w.endObject();
    w.key("dst_endpoint");
    w.beginObject();
    if (!n.ip.empty()) w.member("ip", n.ip);
    if (n.port >= 0) w.memberNumber("port", n.port);
    if (!n.unix_path.empty()) exact.put(w, "name", "dst_endpoint.name", text.path(n.unix_path));
    w.endObject();
    w.key("connection_info");
    w.beginObject();
    w.memberNumber("direction_id", 2);
    w.member("direction", "Outbound");
    if (!n.proto.empty()) w.member("protocol_name", n.proto);
    if (n.family == "inet" || n.family == "inet6")
      w.memberNumber("protocol_ver_id", n.family == "inet" ? 4 : 6);
    w.endObject();
  }
  if (c.class_uid == 6002) {
    w.key("app");
    w.beginObject();
    w.member("name", "supervise");
    w.member("vendor_name", "supervise");
    exact.put(w, "version", "app.version", session.agent_version);
    w.endObject();
  }
  // Everything OCSF has no attribute for, under the native names.
  w.key("unmapped");
  w.beginObject();
  writeSchemaMarker(w);
  putString(w, "category", e.category);
  putString(w, "operation", e.operation);
  if (decision) putString(w, "decision", e.decision);
  if (!e.enforced_by.empty()) putString(w, "enforced_by", e.enforced_by);
  if (!e.rule_id.empty()) putString(w, "rule_id", e.rule_id);
  if (e.default_rule) {
    w.key("default_rule");
    w.boolean(true);
  }
  if (!e.syscall.empty()) putString(w, "syscall", e.syscall);
  if (e.syscall_nr >= 0) w.memberNumber("syscall_nr", e.syscall_nr);
  if (!archName(e.arch).empty()) w.member("arch", archName(e.arch));
  if (e.file.flags >= 0) {
    w.key("file_flags");
    writeFlagNames(w, e.operation, e.file.flags);
  }
  if (decision) {
    w.key("policy");
    w.beginObject();
    putString(w, "name", session.policy_name);
    putString(w, "uid", session.policy_sha256);
    putString(w, "desc", e.rule_reason);
    w.key("is_applied");
    w.boolean(!would_deny);
    w.endObject();
  }
  putString(w, "boot_id", session.boot_id);
  writeDaemonRequest(w, session);
  if (e.process) {
    w.memberNumber("tid", e.process->tid);
    putString(w, "cwd", text.path(e.process->cwd));
    putString(w, "profile", e.process->profile);
  }
  writeSessionDetails(w, text, e);
  exact.writeTo(w, text);
  writeTruncated(w, e, text);
  w.endObject();
  w.endObject();
}

}  // namespace sv::supervisor
