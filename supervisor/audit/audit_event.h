// AuditEvent and its native JSON encoding (schema 1.2), one object per line.
//
// The backends fill an AuditEvent with what they know; encodeEvent() turns it
// into one line of JSON. The encoder never throws and never emits invalid
// UTF-8: a path, argv element or other string that is not valid UTF-8 is
// written with each bad byte replaced by U+FFFD, and the exact bytes go into a
// sibling field `<name>_b64` (standard base64), so a SIEM can match on the
// readable form and forensics can recover the real name. Paths and argv go
// through audit.redact and the size limits first (audit/redact.h), in every
// format. docs/audit-events.md is the reference for every field.
#pragma once

#include <time.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/audit/redact.h"
#include "supervisor/audit/process.h"

namespace sv::supervisor {

// 1.1: event_id, host{name,boot_id}, agent, syscall.arch, rule.name, parent.
// 1.2: truncated.
// 1.6: session.environment.
inline constexpr std::string_view kAuditSchemaVersion = "1.8";

// Constant for the whole session; written into every event.
struct SessionInfo {
  std::string session_id;  // random 128-bit hex, see newSessionId()
  std::string host;  // host name
  std::string policy_name;
  std::string policy_sha256;
  std::string agent_version;
  std::string boot_id;  // /proc/sys/kernel/random/boot_id, see readBootId()
  Redactor redact;      // the policy's audit.redact: what no event shows
  // A command run by `supervise serve` (docs/serve.md): its id and who sent
  // it, in every event of its session. Empty / -1 otherwise.
  std::string command_id;
  int client_pid = -1;
  int64_t client_uid = -1;
};

// How the supervised command ended (session end event).
struct ExitStatus {
  int code = -1;   // exit code when it exited normally, else -1
  int signal = 0;  // terminating signal, else 0
  bool core_dumped = false;
  static ExitStatus fromWaitStatus(int wait_status);
};

struct AuditCounters {
  uint64_t decisions = 0;   // decision events emitted (allow, deny, would-deny)
  uint64_t denials = 0;     // decision == "deny"
  uint64_t would_deny = 0;  // decision == "would-deny" (audit mode)
  uint64_t dropped = 0;     // (event, sink) pairs lost to a full or broken sink
  // Decisions the kernel made and enforced whose records never reached
  // supervise (a BPF ring buffer was full): events that were never made.
  uint64_t unrecorded = 0;
};

// One path the session keeps out of the tree's reach (session start
// `self_protected`; docs/policy.md, "Self-protection").
struct SelfProtectedPath {
  std::string id;      // "self-protect:audit-file"
  std::string path;    // as the rule matches it (a glob only for spool files)
  std::string access;  // "write" or "read-write"
  bool operator==(const SelfProtectedPath&) const = default;
};

// What the session did to the command's environment (session start
// `environment`; docs/policy.md, "Environment"): names, never values.
struct RemovedEnvVar {
  std::string name;
  std::string rule_id, reason;
  bool operator==(const RemovedEnvVar&) const = default;
};
struct SessionEnvironment {
  bool applied = true;  // false in audit mode: `removed` were kept ("would_remove")
  std::vector<RemovedEnvVar> removed;
  std::vector<std::string> set;  // names environment.set gave a value
};

struct AuditEvent {
  std::string category;   // file | exec | network | process | session
  std::string operation;  // open | write | create | unlink | rename | ... | exec | connect | ...
  std::string syscall;    // "openat"; empty when not from a syscall
  int syscall_nr = -1;
  uint32_t arch = 0;        // AUDIT_ARCH_* of the syscall (seccomp_data.arch), 0 = unknown
  std::string decision;     // allow | deny | would-deny
  std::string enforced_by;  // seccomp | landlock | cgroup-bpf | bpf-lsm | ...
  int err = 0;              // positive errno returned to the caller, 0 = none
  std::string rule_id, rule_reason;
  std::string rule_name;  // the rule's pattern as written, when the backend knows it
  bool default_rule = false;
  bool truncated = false;  // the producer already cut a string (the BPF tracker's argv)
  const ProcessInfo* process = nullptr;  // not owned; must outlive encode/emit
  struct {
    std::string path, path2;  // path2: rename/link/symlink target
    int flags = -1;           // raw flags: open(2) flags, or renameat2/unlinkat flags
    int mode = -1;            // creation / chmod mode
  } file;
  struct {
    std::string path;
    std::vector<std::string> argv;
  } exec;
  struct {
    std::string family, proto, ip, unix_path;  // unix_path: abstract names as "@name"
    int port = -1;
  } network;
  // The other process of a process operation (a signal's recipient), when known.
  struct {
    int pid = -1;
    std::string comm;
  } target;
  // Session start / end events only (category "session"). Left empty otherwise.
  struct {
    std::vector<std::string> command;
    nlohmann::ordered_json policy;  // the effective policy (policy_json.h), null when unset
    // `policy` already serialized (effectivePolicyText), as its digest was
    // made: written as is. Empty: `policy` is serialized at encoding.
    std::string policy_text;
    std::vector<std::string> backends;
    // doctor's feature matrix as the session found the host (doctor.h
    // sessionHostCaps), null when unset: rows of {id,label,used,enforceable,backend,detail}.
    nlohmann::ordered_json backend_matrix;
    std::vector<SelfProtectedPath> self_protected;
    SessionEnvironment environment;
    bool has_exit = false;
    ExitStatus exit;
    bool has_counters = false;
    AuditCounters counters;
    // operation "reload" (the exec daemon): the new policy's digest; its
    // effective JSON is `policy`.
    std::string policy_sha256;
    // operation "dropped" (OCSF/ECS; the native record is encodeDropped()).
    uint64_t dropped_count = 0, dropped_first = 0, dropped_last = 0, dropped_total = 0;
  } session;

  // Back to the default-constructed state, keeping the capacity of the
  // strings, so an event reused per decision allocates nothing once warm.
  // A field added above must be reset here too.
  void reset();
};

// Appends one event as a single line of JSON (no trailing newline) to `out`.
// Allocation-free once `out` has the capacity (the AuditLog reuses one buffer).
void encodeEventTo(std::string& out, const AuditEvent& event, const SessionInfo& session,
                   uint64_t seq, timespec time);
// The same, as a new string.
std::string encodeEvent(const AuditEvent& event, const SessionInfo& session, uint64_t seq,
                        timespec time);

// The record a sink writes after it had to drop events: it explains the seq
// range [first_seq, last_seq] missing from that sink. It has no seq of its
// own, so seq stays gap-free in every sink that lost nothing.
std::string encodeDropped(const SessionInfo& session, timespec time, uint64_t count,
                          uint64_t first_seq, uint64_t last_seq, uint64_t total);

AuditEvent sessionStartEvent(std::vector<std::string> command, nlohmann::ordered_json policy,
                             std::vector<std::string> backends,
                             nlohmann::ordered_json backend_matrix = nullptr,
                             std::vector<SelfProtectedPath> self_protected = {},
                             SessionEnvironment environment = {});
AuditEvent sessionEndEvent(ExitStatus exit, const AuditCounters& counters);
// The exec daemon's new policy (category session, operation reload).
AuditEvent policyReloadEvent(nlohmann::ordered_json policy, std::string sha256);

// Helpers, exposed for tests and for the other output formats.
std::string formatRfc3339(timespec time);           // 2026-11-29T10:33:11.123456789Z
inline constexpr size_t kRfc3339Size = 32;
size_t formatRfc3339To(char (&buf)[kRfc3339Size], timespec time);  // returns the length (30)
std::vector<std::string> openFlagNames(int flags);  // ["O_WRONLY","O_CREAT"]
std::vector<std::string> flagNames(std::string_view operation, int flags);
std::string errnoName(int err);  // "EACCES"; "" for 0
bool isValidUtf8(std::string_view s);
std::string toValidUtf8(std::string_view s);  // invalid bytes → U+FFFD
std::string base64Encode(std::string_view bytes);
void base64Append(std::string& out, std::string_view bytes);
std::string newSessionId();  // 32 lowercase hex chars from getrandom()
std::string readBootId();    // the kernel's boot id, "" when unreadable
std::string_view archName(uint32_t audit_arch);  // "x86_64", "i386", "aarch64", ...; "" unknown

}  // namespace sv::supervisor
