// Kernel audit record parser: stamp, fields, events, denials (audit_records.h).
//
// Field syntax as the kernel writes it (kernel/audit.c, security/landlock/audit.c,
// kernel/auditsc.c): `key=value` separated by single spaces; a value is either
// "quoted" (then it holds no quote, space or control byte), uppercase hex (an
// untrusted string that held one), or a bare token (numbers, yes/no, (null)).
#include "tracer/kernel_audit/audit_records.h"

#include <algorithm>
#include <charconv>

#include "tracer/kernel_audit/audit_abi.h"

namespace sv::tracer::kernel_audit {
namespace {

// Keys whose values the kernel logs with audit_log_untrustedstring() (or as hex
// always: proctitle, an abstract socket's path).
bool isUntrustedKey(std::string_view key) {
  static constexpr std::string_view kKeys[] = {"path", "comm", "exe",       "ocomm", "name",
                                               "cwd",  "dev",  "proctitle", "cmd"};
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

template <typename T>
std::optional<T> parseInt(std::string_view s, int base = 10) {
  if (s.empty()) return std::nullopt;
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

const AuditField* find(const std::vector<AuditField>& fields, std::string_view key) {
  for (const auto& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

template <typename T>
std::optional<T> intField(const std::vector<AuditField>& fields, std::string_view key,
                          int base = 10) {
  const AuditField* f = find(fields, key);
  if (!f) return std::nullopt;
  return parseInt<T>(f->value, base);
}

std::string strField(const std::vector<AuditField>& fields, std::string_view key) {
  const AuditField* f = find(fields, key);
  return f ? f->value : std::string();
}

std::optional<std::string> optField(const std::vector<AuditField>& fields, std::string_view key) {
  const AuditField* f = find(fields, key);
  if (!f) return std::nullopt;
  return f->value;
}

SyscallRecord syscallRecord(const std::vector<AuditField>& f) {
  SyscallRecord r;
  r.arch = intField<uint32_t>(f, "arch", 16).value_or(0);
  r.syscall = intField<int64_t>(f, "syscall").value_or(-1);
  r.success = strField(f, "success") == "yes";
  r.exit = intField<int64_t>(f, "exit").value_or(0);
  r.pid = intField<int64_t>(f, "pid").value_or(-1);
  r.ppid = intField<int64_t>(f, "ppid").value_or(-1);
  r.uid = intField<int64_t>(f, "uid").value_or(-1);
  r.auid = intField<int64_t>(f, "auid").value_or(-1);
  r.comm = strField(f, "comm");
  r.exe = strField(f, "exe");
  return r;
}

LandlockDomainRecord domainRecord(const AuditStamp& stamp, const std::vector<AuditField>& f) {
  LandlockDomainRecord r;
  r.stamp = stamp;
  r.domain = intField<uint64_t>(f, "domain", 16).value_or(0);
  r.allocated = strField(f, "status") == "allocated";
  r.mode = strField(f, "mode");
  r.pid = intField<int64_t>(f, "pid").value_or(-1);
  r.uid = intField<int64_t>(f, "uid").value_or(-1);
  r.exe = strField(f, "exe");
  r.comm = strField(f, "comm");
  r.denials = intField<uint64_t>(f, "denials");
  return r;
}

SeccompAction actionOf(uint32_t code) {
  switch (code & abi::kSeccompRetActionFull) {
    case abi::kSeccompRetKillProcess:
      return SeccompAction::kKillProcess;
    case abi::kSeccompRetKillThread:
      return SeccompAction::kKillThread;
    case abi::kSeccompRetTrap:
      return SeccompAction::kTrap;
    case abi::kSeccompRetErrno:
      return SeccompAction::kErrno;
    case abi::kSeccompRetUserNotif:
      return SeccompAction::kUserNotif;
    case abi::kSeccompRetTrace:
      return SeccompAction::kTrace;
    case abi::kSeccompRetLog:
      return SeccompAction::kLog;
    case abi::kSeccompRetAllow:
      return SeccompAction::kAllow;
    default:
      return SeccompAction::kUnknown;
  }
}

KernelDenial seccompDenial(const AuditStamp& stamp, const std::vector<AuditField>& f) {
  KernelDenial d;
  d.kind = DenialKind::kSeccomp;
  d.stamp = stamp;
  d.pid = intField<int64_t>(f, "pid");
  d.comm = strField(f, "comm");
  d.exe = strField(f, "exe");
  d.arch = intField<uint32_t>(f, "arch", 16).value_or(0);
  d.syscall_nr = intField<int64_t>(f, "syscall").value_or(-1);
  d.sig = intField<int>(f, "sig").value_or(0);
  d.compat = intField<int>(f, "compat").value_or(0) != 0;
  d.code = intField<uint32_t>(f, "code", 16).value_or(0);
  d.action = actionOf(d.code);
  if (d.action == SeccompAction::kErrno)
    d.errno_value = static_cast<int>(d.code & abi::kSeccompRetData);
  static constexpr std::string_view kKnown[] = {"auid",   "uid", "gid", "ses",  "pid",
                                                "comm",   "exe", "sig", "arch", "syscall",
                                                "compat", "ip",  "code"};
  for (const auto& field : f) {
    if (d.other.size() >= kMaxOtherFields) break;
    if (std::find(std::begin(kKnown), std::end(kKnown), field.key) == std::end(kKnown))
      d.other.emplace_back(field.key, field.value);
  }
  return d;
}

DenialKind kindOfBlockers(const std::vector<std::string>& blockers) {
  if (blockers.empty()) return DenialKind::kLandlockOther;
  std::string_view b = blockers.front();
  if (b.starts_with("fs.")) return DenialKind::kLandlockFs;
  if (b.starts_with("scope.")) return DenialKind::kLandlockScope;
  if (b.starts_with("net.")) return DenialKind::kLandlockNet;
  return DenialKind::kLandlockOther;
}

}  // namespace

const char* denialKindName(DenialKind kind) {
  switch (kind) {
    case DenialKind::kLandlockFs:
      return "landlock.fs";
    case DenialKind::kLandlockScope:
      return "landlock.scope";
    case DenialKind::kLandlockNet:
      return "landlock.net";
    case DenialKind::kLandlockOther:
      return "landlock.other";
    case DenialKind::kSeccomp:
      return "seccomp";
  }
  return "?";
}

const char* seccompActionName(SeccompAction action) {
  switch (action) {
    case SeccompAction::kKillProcess:
      return "kill_process";
    case SeccompAction::kKillThread:
      return "kill_thread";
    case SeccompAction::kTrap:
      return "trap";
    case SeccompAction::kErrno:
      return "errno";
    case SeccompAction::kUserNotif:
      return "user_notif";
    case SeccompAction::kTrace:
      return "trace";
    case SeccompAction::kLog:
      return "log";
    case SeccompAction::kAllow:
      return "allow";
    case SeccompAction::kUnknown:
      return "unknown";
  }
  return "?";
}

std::optional<AuditStamp> parseStamp(std::string_view text, std::string_view* body) {
  constexpr std::string_view kPrefix = "audit(";
  if (!text.starts_with(kPrefix)) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  const size_t dot = text.find('.');
  const size_t colon = text.find(':');
  const size_t close = text.find(')');
  if (dot == std::string_view::npos || colon == std::string_view::npos ||
      close == std::string_view::npos || !(dot < colon && colon < close))
    return std::nullopt;
  AuditStamp s;
  auto sec = parseInt<uint64_t>(text.substr(0, dot));
  auto msec = parseInt<uint32_t>(text.substr(dot + 1, colon - dot - 1));
  auto serial = parseInt<uint64_t>(text.substr(colon + 1, close - colon - 1));
  if (!sec || !msec || !serial || *msec > 999) return std::nullopt;
  s.sec = *sec;
  s.msec = *msec;
  s.serial = *serial;
  std::string_view rest = text.substr(close + 1);
  if (rest.starts_with(':')) rest.remove_prefix(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (body) *body = rest;
  return s;
}

std::optional<std::string> decodeHex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hexDigit(hex[i]);
    const int lo = hexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

std::vector<AuditField> parseFields(std::string_view body) {
  std::vector<AuditField> fields;
  size_t i = 0;
  const size_t n = body.size();
  while (i < n && fields.size() < kMaxFields) {
    while (i < n && (body[i] == ' ' || body[i] == '\n' || body[i] == '\0')) ++i;
    if (i >= n) break;
    const size_t key_start = i;
    while (i < n && body[i] != '=' && body[i] != ' ') ++i;
    if (i >= n || body[i] != '=') continue;  // a bare word: not a field
    std::string_view key = body.substr(key_start, i - key_start);
    ++i;  // '='
    std::string_view raw;
    bool quoted = false;
    if (i < n && body[i] == '"') {
      const size_t end = body.find('"', i + 1);
      if (end == std::string_view::npos) {
        raw = body.substr(i + 1);  // unterminated: keep what there is, stop
        i = n;
      } else {
        raw = body.substr(i + 1, end - i - 1);
        i = end + 1;
      }
      quoted = true;
    } else {
      const size_t start = i;
      while (i < n && body[i] != ' ' && body[i] != '\n' && body[i] != '\0') ++i;
      raw = body.substr(start, i - start);
    }
    if (key.empty()) continue;
    if (!quoted && (raw == "(null)" || raw == "?" || raw == "(none)")) continue;
    AuditField f;
    f.key = std::string(key);
    if (!quoted && isUntrustedKey(key)) {
      if (auto decoded = decodeHex(raw)) {
        f.value = std::move(*decoded);
        f.hex = true;
      } else {
        f.value = std::string(raw);
      }
    } else {
      f.value = std::string(raw);
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

void RecordAssembler::feed(uint16_t type, std::string_view text, Output& out) {
  if (type != abi::kAuditLandlockAccess && type != abi::kAuditLandlockDomain &&
      type != abi::kAuditSeccomp && type != abi::kAuditSyscall && type != abi::kAuditProctitle &&
      type != abi::kAuditEoe)
    return;
  std::string_view body;
  auto stamp = parseStamp(text, &body);
  if (!stamp) {
    ++malformed_;
    return;
  }
  newest_ms_ = std::max(newest_ms_, stamp->millis());

  if (type == abi::kAuditSeccomp) {
    // Always alone: seccomp runs before syscall-entry auditing, so no SYSCALL/EOE follow.
    out.denials.push_back(seccompDenial(*stamp, parseFields(body)));
    return;
  }
  auto it = open_.find(stamp->serial);
  if (type == abi::kAuditLandlockAccess || type == abi::kAuditLandlockDomain) {
    auto fields = parseFields(body);
    if (type == abi::kAuditLandlockDomain && strField(fields, "status") != "allocated") {
      // "deallocated" comes from the domain's release, never inside an event.
      out.domains.push_back(domainRecord(*stamp, fields));
      return;
    }
    if (it == open_.end()) {
      if (open_.size() >= kMaxOpenEvents) {
        ++evicted_;
        complete(open_.begin()->second, out);
        open_.erase(open_.begin());
      }
      it = open_.emplace(stamp->serial, Event{}).first;
      it->second.stamp = *stamp;
    }
    Event& e = it->second;
    if (type == abi::kAuditLandlockAccess) {
      if (e.accesses.size() < kMaxAccessesPerEvent) e.accesses.push_back(std::move(fields));
    } else if (!e.allocated) {
      e.allocated = domainRecord(*stamp, fields);
    }
    return;
  }
  // SYSCALL, PROCTITLE, EOE matter only for an event that already holds a Landlock
  // record (they come at syscall exit, after it); everything else is someone else's.
  if (it == open_.end()) return;
  Event& e = it->second;
  if (type == abi::kAuditSyscall) {
    if (!e.syscall) e.syscall = syscallRecord(parseFields(body));
  } else if (type == abi::kAuditProctitle) {
    auto fields = parseFields(body);
    if (!e.proctitle) e.proctitle = optField(fields, "proctitle");
  } else {  // EOE
    complete(e, out);
    open_.erase(it);
  }
}

void RecordAssembler::complete(Event& e, Output& out) {
  if (e.allocated) out.domains.push_back(*e.allocated);
  for (const auto& f : e.accesses) {
    KernelDenial d;
    d.stamp = e.stamp;
    d.domain = intField<uint64_t>(f, "domain", 16).value_or(0);
    const std::string blockers = strField(f, "blockers");
    size_t start = 0;
    while (start < blockers.size() && d.blockers.size() < 32) {
      size_t comma = blockers.find(',', start);
      if (comma == std::string::npos) comma = blockers.size();
      if (comma > start) d.blockers.push_back(blockers.substr(start, comma - start));
      start = comma + 1;
    }
    d.kind = kindOfBlockers(d.blockers);
    d.path = optField(f, "path");
    d.dev = optField(f, "dev");
    d.ino = intField<uint64_t>(f, "ino");
    d.opid = intField<int64_t>(f, "opid");
    d.ocomm = optField(f, "ocomm");
    static constexpr std::string_view kKnown[] = {"domain", "blockers", "path", "dev",
                                                  "ino",    "opid",     "ocomm"};
    for (const auto& field : f) {
      if (d.other.size() >= kMaxOtherFields) break;
      if (std::find(std::begin(kKnown), std::end(kKnown), field.key) == std::end(kKnown))
        d.other.emplace_back(field.key, field.value);
    }
    if (e.allocated && e.allocated->domain == d.domain) d.domain_allocated = e.allocated;
    if (e.syscall) {
      d.syscall_record = e.syscall;
      d.pid = e.syscall->pid;
      d.comm = e.syscall->comm;
      d.exe = e.syscall->exe;
      d.arch = e.syscall->arch;
      d.syscall_nr = e.syscall->syscall;
    }
    d.proctitle = e.proctitle;
    out.denials.push_back(std::move(d));
  }
}

void RecordAssembler::flushOlderThan(uint64_t age_ms, Output& out) {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.stamp.millis() + age_ms < newest_ms_) {
      complete(it->second, out);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

void RecordAssembler::flushAll(Output& out) {
  for (auto& [serial, e] : open_) complete(e, out);
  open_.clear();
}

void SessionFilter::observe(const LandlockDomainRecord& record) {
  // Kept after "deallocated" too: a denial of a task without an audit context
  // completes only at a flush, possibly after its domain's release record. Domain
  // ids come from a 64-bit counter, never reused until reboot; a session has few.
  if (record.allocated && record.pid == root_pid_ && !ownsDomain(record.domain))
    domains_.push_back(record.domain);
}

bool SessionFilter::ownsDomain(uint64_t domain) const {
  return std::find(domains_.begin(), domains_.end(), domain) != domains_.end();
}

}  // namespace sv::tracer::kernel_audit
