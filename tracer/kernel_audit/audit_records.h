// Kernel audit records (netlink text) → structured kernel denials of Landlock and seccomp.
//
// Pure: no syscalls, no fds. The input is hostile: a record carries comm, exe and path
// bytes the supervised tree chose. The kernel hex-encodes any such value holding a
// quote, a space, a control or a non-ASCII byte (audit_log_untrustedstring), so a
// value can never fake a field; this parser still bounds everything it keeps (fields
// per record, records per event, open events) and never trusts a length.
//
// One kernel event is several records sharing a stamp `audit(sec.msec:serial)`: a
// Landlock denial inside a syscall is AUDIT_LANDLOCK_ACCESS (+ AUDIT_LANDLOCK_DOMAIN
// "allocated" at a domain's first denial), then at syscall exit SYSCALL, PROCTITLE
// and EOE. A seccomp record is always alone (the filter runs before syscall-entry
// auditing starts), as is a domain's "deallocated" record. A task forked before audit
// was enabled has no audit context: its Landlock records come alone, with a fresh
// serial each and no EOE; flushOlderThan() completes those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sv::tracer::kernel_audit {

struct AuditStamp {
  uint64_t sec = 0;
  uint32_t msec = 0;
  uint64_t serial = 0;
  uint64_t millis() const { return sec * 1000 + msec; }
  bool operator==(const AuditStamp&) const = default;
};

// Splits "audit(1796171915.201:3): body" into its stamp and body.
std::optional<AuditStamp> parseStamp(std::string_view text, std::string_view* body);

struct AuditField {
  std::string key;
  std::string value;  // decoded bytes: unquoted, hex decoded for untrusted-string keys
  bool hex = false;   // the kernel hex-encoded it (the value held unsafe bytes)
};

// key=value pairs of a record body, in order, at most kMaxFields. Values the kernel
// writes as "(null)" or "?" are dropped.
inline constexpr size_t kMaxFields = 96;
std::vector<AuditField> parseFields(std::string_view body);

// Decodes an audit hex string ("2F746D70" → "/tmp"); nullopt when not hex.
std::optional<std::string> decodeHex(std::string_view hex);

// The SYSCALL record of the event, when the task had an audit context.
struct SyscallRecord {
  uint32_t arch = 0;
  int64_t syscall = -1;
  bool success = false;
  int64_t exit = 0;  // return value, -errno on failure
  int64_t pid = -1;
  int64_t ppid = -1;
  int64_t uid = -1;
  int64_t auid = -1;
  std::string comm;
  std::string exe;
};

// An AUDIT_LANDLOCK_DOMAIN record. "allocated" comes with a domain's first denial and
// names the task that called landlock_restrict_self() (pid, exe, comm as of then);
// "deallocated" comes when the last task of the domain is gone and says how many
// denials the kernel counted for it, which lets a reader detect lost records.
struct LandlockDomainRecord {
  AuditStamp stamp;
  uint64_t domain = 0;
  bool allocated = false;  // else deallocated
  std::string mode;        // "enforcing"
  int64_t pid = -1;        // creator (allocated only)
  int64_t uid = -1;
  std::string exe;
  std::string comm;
  std::optional<uint64_t> denials;  // deallocated only
};

enum class DenialKind { kLandlockFs, kLandlockScope, kLandlockNet, kLandlockOther, kSeccomp };
const char* denialKindName(DenialKind kind);

enum class SeccompAction {
  kKillProcess,
  kKillThread,
  kTrap,
  kErrno,
  kUserNotif,
  kTrace,
  kLog,
  kAllow,
  kUnknown
};
const char* seccompActionName(SeccompAction action);

struct KernelDenial {
  DenialKind kind = DenialKind::kLandlockOther;
  AuditStamp stamp;

  // The denying process: from SYSCALL for Landlock (absent without an audit context),
  // from the record itself for seccomp.
  std::optional<int64_t> pid;
  std::string comm;
  std::string exe;

  // Landlock
  uint64_t domain = 0;
  std::vector<std::string> blockers;  // "fs.read_file", "scope.signal", "net.connect_tcp"
  std::optional<std::string> path;    // raw bytes; an abstract socket's begins with NUL
  std::optional<std::string> dev;
  std::optional<uint64_t> ino;
  std::optional<int64_t> opid;  // scope.signal / abstract socket: the other side
  std::optional<std::string> ocomm;
  std::optional<LandlockDomainRecord> domain_allocated;  // in the same event

  // seccomp
  uint32_t arch = 0;
  int64_t syscall_nr = -1;  // also set from SYSCALL for Landlock
  int sig = 0;
  bool compat = false;
  uint32_t code = 0;
  SeccompAction action = SeccompAction::kUnknown;
  // kErrno: the errno data of code. 0 from today's kernels: audit_seccomp() logs the
  // action without its data, so the errno comes from the session's plan.
  int errno_value = 0;

  std::optional<SyscallRecord> syscall_record;
  std::optional<std::string> proctitle;  // argv joined by NUL, truncated by the kernel (128 B)

  // Fields of the denial record this struct has no member for (net addresses, newer
  // kernels), at most kMaxOtherFields.
  std::vector<std::pair<std::string, std::string>> other;
};
inline constexpr size_t kMaxOtherFields = 16;

// Groups records into events and turns the events into denials. Feed it every record
// read from the audit socket, in order; completed denials and domain records are
// appended to an Output. Memory is bounded: only events that hold a Landlock record
// are kept open, at most kMaxOpenEvents (the oldest completes early).
class RecordAssembler {
 public:
  static constexpr size_t kMaxOpenEvents = 1024;
  static constexpr size_t kMaxAccessesPerEvent = 16;

  struct Output {
    std::vector<KernelDenial> denials;
    std::vector<LandlockDomainRecord> domains;
  };

  void feed(uint16_t type, std::string_view text, Output& out);
  // Completes events older than age_ms behind the newest stamp seen (records of
  // tasks without an audit context never get an EOE).
  void flushOlderThan(uint64_t age_ms, Output& out);
  void flushAll(Output& out);

  size_t openEvents() const { return open_.size(); }
  uint64_t malformed() const { return malformed_; }  // records without a readable stamp
  uint64_t evicted() const { return evicted_; }      // events completed early (bound hit)

 private:
  struct Event {
    AuditStamp stamp;
    std::vector<std::vector<AuditField>> accesses;
    std::optional<LandlockDomainRecord> allocated;
    std::optional<SyscallRecord> syscall;
    std::optional<std::string> proctitle;
  };
  void complete(Event& event, Output& out);

  std::map<uint64_t, Event> open_;  // by serial
  uint64_t newest_ms_ = 0;
  uint64_t malformed_ = 0;
  uint64_t evicted_ = 0;
};

// Which denials belong to one session. A Landlock domain is inherited only through
// fork/clone, so a denial in a domain the session's first process created (its
// "allocated" record names that pid) is the session's whatever pid it comes from;
// anything else (seccomp records, nested domains the tree made itself) is judged by
// the denying pid through the caller's process table.
class SessionFilter {
 public:
  explicit SessionFilter(int64_t root_pid) : root_pid_(root_pid) {}

  // Remember the session's domains; call for every LandlockDomainRecord.
  void observe(const LandlockDomainRecord& record);

  template <typename InSession>
  bool accept(const KernelDenial& denial, InSession&& in_session) {
    if (denial.domain_allocated) observe(*denial.domain_allocated);
    if (denial.kind != DenialKind::kSeccomp && ownsDomain(denial.domain)) return true;
    return denial.pid && in_session(*denial.pid);
  }
  bool ownsDomain(uint64_t domain) const;
  const std::vector<uint64_t>& domains() const { return domains_; }

 private:
  int64_t root_pid_;
  std::vector<uint64_t> domains_;
};

}  // namespace sv::tracer::kernel_audit
