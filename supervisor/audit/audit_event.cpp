// Native JSON encoding of audit events.
//
// Every decision goes through encodeEventTo(), so it writes with JsonWriter
// straight into the caller's reused buffer: no tree, no temporary strings, no
// allocation once the buffer is warm. Only the session start event touches
// nlohmann (to dump the policy summary); an exception there (or bad_alloc)
// is caught and replaced by a minimal line that keeps the seq, so an audit
// event is never silently lost to an encoding problem.
#include "supervisor/audit/audit_event.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>

#include "common/unique_fd.h"
#include "supervisor/audit/formats/encode_util.h"
#include "supervisor/audit/json_writer.h"

namespace sv::supervisor {
namespace {

struct FlagName {
  int bit;
  const char* name;
};

// asm-generic/fcntl.h values (x86_64, aarch64), spelled out rather than taken
// from glibc, which defines O_LARGEFILE as 0 on 64-bit targets while the
// kernel still sees the real bit from 32-bit callers.
constexpr FlagName kOpenFlags[] = {
    {00000100, "O_CREAT"},     {00000200, "O_EXCL"},      {00000400, "O_NOCTTY"},
    {00001000, "O_TRUNC"},     {00002000, "O_APPEND"},    {00004000, "O_NONBLOCK"},
    {00010000, "O_DSYNC"},     {00020000, "O_ASYNC"},     {00040000, "O_DIRECT"},
    {00100000, "O_LARGEFILE"}, {00200000, "O_DIRECTORY"}, {00400000, "O_NOFOLLOW"},
    {01000000, "O_NOATIME"},   {02000000, "O_CLOEXEC"},   {010000000, "O_PATH"},
};
constexpr int kSyncBit = 04000000;      // __O_SYNC; O_SYNC = __O_SYNC | O_DSYNC
constexpr int kTmpfileBit = 020000000;  // __O_TMPFILE; O_TMPFILE = __O_TMPFILE | O_DIRECTORY

constexpr FlagName kRenameFlags[] = {
    {1, "RENAME_NOREPLACE"}, {2, "RENAME_EXCHANGE"}, {4, "RENAME_WHITEOUT"}};
constexpr FlagName kXattrFlags[] = {{1, "XATTR_CREATE"}, {2, "XATTR_REPLACE"}};
constexpr FlagName kAtFlags[] = {{0x100, "AT_SYMLINK_NOFOLLOW"},
                                 {0x200, "AT_REMOVEDIR"},
                                 {0x400, "AT_SYMLINK_FOLLOW"},
                                 {0x800, "AT_NO_AUTOMOUNT"},
                                 {0x1000, "AT_EMPTY_PATH"}};

// Calls emit(name) for each set bit in table order, then once with the hex of
// any bits we have no name for (they stay visible).
template <size_t N, typename Emit>
void bitNames(unsigned flags, const FlagName (&table)[N], Emit&& emit) {
  for (const auto& f : table) {
    if (flags & unsigned(f.bit)) {
      emit(std::string_view(f.name));
      flags &= ~unsigned(f.bit);
    }
  }
  if (flags) {
    char buf[16];
    emit(std::string_view(buf, size_t(std::snprintf(buf, sizeof buf, "0x%x", flags))));
  }
}

template <typename Emit>
void openFlagNamesTo(int flags, Emit&& emit) {
  static constexpr std::string_view kAccess[] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
  unsigned f = unsigned(flags);
  emit(kAccess[f & 3u]);  // 3 is invalid, but callers can pass it
  f &= ~3u;
  if (f & unsigned(kTmpfileBit)) {
    emit(std::string_view("O_TMPFILE"));
    f &= ~unsigned(kTmpfileBit | 00200000);
  }
  if (f & unsigned(kSyncBit)) {
    emit(std::string_view("O_SYNC"));
    f &= ~unsigned(kSyncBit | 00010000);
  }
  bitNames(f, kOpenFlags, emit);
}

template <typename Emit>
void forEachFlagName(std::string_view operation, int flags, Emit&& emit) {
  if (operation == "rename") return bitNames(unsigned(flags), kRenameFlags, emit);
  if (operation == "setxattr") return bitNames(unsigned(flags), kXattrFlags, emit);
  if (operation == "unlink" || operation == "rmdir" || operation == "link" ||
      operation == "chmod" || operation == "chown" || operation == "utimes" ||
      operation == "exec") {
    return bitNames(unsigned(flags), kAtFlags, emit);
  }
  openFlagNamesTo(flags, emit);  // open, create, write, read, truncate, mkdir, ...
}

}  // namespace

void writeFlagNames(JsonWriter& w, std::string_view operation, int flags) {
  w.beginArray();
  forEachFlagName(operation, flags, [&](std::string_view n) { w.string(n); });
  w.endArray();
}

void writeBase64(JsonWriter& w, std::string_view bytes) {
  std::string& out = w.out();
  w.string({});  // places the comma and the quotes; the digits go between them
  out.pop_back();
  base64Append(out, bytes);
  out += '"';
}

void writeSelfProtected(JsonWriter& w, EventText& text,
                        const std::vector<SelfProtectedPath>& paths) {
  w.key("self_protected");
  w.beginArray();
  for (const auto& p : paths) {
    w.beginObject();
    w.member("id", p.id);
    putString(w, "path", text.path(p.path));
    w.member("access", p.access);
    w.endObject();
  }
  w.endArray();
}

void writeEnvironment(JsonWriter& w, const SessionEnvironment& env) {
  w.key("environment");
  w.beginObject();
  w.key("applied");
  w.boolean(env.applied);
  w.key(env.applied ? "removed" : "would_remove");
  w.beginArray();
  for (const auto& r : env.removed) {
    w.beginObject();
    putString(w, "name", r.name);
    w.key("rule");
    w.beginObject();
    w.member("id", r.rule_id);
    w.member("reason", r.reason);
    w.endObject();
    w.endObject();
  }
  w.endArray();
  w.key("set");
  w.beginArray();
  for (const auto& n : env.set) w.string(n);
  w.endArray();
  w.endObject();
}

void writeTarget(JsonWriter& w, const AuditEvent& e) {
  if (e.target.pid < 0) return;
  w.key("target");
  w.beginObject();
  w.memberNumber("pid", e.target.pid);
  if (!e.target.comm.empty()) putString(w, "comm", e.target.comm);
  w.endObject();
}

// Writes key (and key_b64 when the bytes are not UTF-8).
void putString(JsonWriter& w, std::string_view key, std::string_view value) {
  w.key(key);
  if (!w.string(value)) {  // lossy: invalid bytes became U+FFFD
    w.key(key, "_b64");
    writeBase64(w, value);
  }
}

// argv: one lossy array, plus a full parallel base64 array if any element is
// not UTF-8 (parallel so indexes match).
void putArgv(JsonWriter& w, EventText& text, std::string_view key,
             const std::vector<std::string>& argv) {
  w.key(key);
  w.beginArray();
  bool all_valid = true;
  text.forEachArg(argv, [&](std::string_view a) { all_valid &= w.string(a); });
  w.endArray();
  if (!all_valid) {
    w.key(key, "_b64");
    w.beginArray();
    text.forEachArg(argv, [&](std::string_view a) { writeBase64(w, a); });
    w.endArray();
  }
}

void writeTruncated(JsonWriter& w, const AuditEvent& e, const EventText& text) {
  if (!e.truncated && !text.truncated()) return;
  w.key("truncated");
  w.boolean(true);
}

namespace {

void writeId(JsonWriter& w, std::string_view key, uint32_t id) {
  w.key(key);
  id == ProcessInfo::kUnknownId ? w.null() : w.unsignedNumber(id);
}

void writeProcess(JsonWriter& w, EventText& text, const ProcessInfo& p) {
  w.key("process");
  w.beginObject();
  w.memberNumber("pid", p.pid);
  w.memberNumber("tid", p.tid);
  w.key("ppid");
  p.ppid >= 0 ? w.number(p.ppid) : w.null();
  w.key("start_time");
  p.start_time ? w.unsignedNumber(p.start_time) : w.null();
  writeId(w, "uid", p.uid);
  writeId(w, "euid", p.euid);
  writeId(w, "gid", p.gid);
  putString(w, "comm", p.comm);
  putString(w, "exe", text.path(p.exe));
  putArgv(w, text, "argv", p.argv);
  putString(w, "cwd", text.path(p.cwd));
  putString(w, "profile", p.profile);
  w.endObject();
}

void writeCounters(JsonWriter& w, const AuditCounters& c) {
  w.key("counters");
  w.beginObject();
  w.key("decisions");
  w.unsignedNumber(c.decisions);
  w.key("denials");
  w.unsignedNumber(c.denials);
  w.key("would_deny");
  w.unsignedNumber(c.would_deny);
  w.key("dropped");
  w.unsignedNumber(c.dropped);
  w.key("unrecorded");
  w.unsignedNumber(c.unrecorded);
  w.endObject();
}

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

}  // namespace

void writeTime(JsonWriter& w, timespec time) {
  char buf[kRfc3339Size];
  w.string(std::string_view(buf, formatRfc3339To(buf, time)));
}

// event_id: unique across sessions and hosts without a random draw per event.
void writeEventId(JsonWriter& w, const SessionInfo& session, std::string_view kind,
                  uint64_t n) {
  char num[24];
  auto r = std::to_chars(num, num + sizeof num, n);
  std::string& out = w.out();
  w.string(session.session_id);
  out.pop_back();  // extend the string just written: "<session_id>-<kind><n>"
  out += '-';
  out.append(kind);
  out.append(num, r.ptr);
  out += '"';
}

namespace {

// time, event_id (<session_id>-<id_kind><id>), session_id, host, agent.
void writeHeader(JsonWriter& w, const SessionInfo& session, timespec time,
                 std::string_view id_kind, uint64_t id) {
  w.key("time");
  writeTime(w, time);
  w.key("event_id");
  writeEventId(w, session, id_kind, id);
  putString(w, "session_id", session.session_id);
  writeDaemonRequest(w, session);
  w.key("host");
  w.beginObject();
  putString(w, "name", session.host);
  putString(w, "boot_id", session.boot_id);
  w.endObject();
  w.key("agent");
  w.beginObject();
  w.member("name", "supervise");
  putString(w, "version", session.agent_version);
  w.endObject();
}

}  // namespace

void writeErrno(JsonWriter& w, int err) {
  if (err == 0) return w.null();
  if (const char* name = strerrorname_np(err)) {
    w.string(name);
    return;
  }
  char buf[16];
  w.string(std::string_view(buf, size_t(std::snprintf(buf, sizeof buf, "E%d", err))));
}

namespace {

// Session start/end: rare, so the policy summary may go through nlohmann.
void writeSessionPart(JsonWriter& w, EventText& text, const AuditEvent& e,
                      const SessionInfo& session) {
  const bool start = e.operation == "start";
  const bool reload = e.operation == "reload";
  if (!start && !reload && !e.session.has_exit && !e.session.has_counters) return;
  w.key("session");
  w.beginObject();
  if (reload) {
    w.key("policy");
    w.raw(e.session.policy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (start) {
    putArgv(w, text, "command", e.session.command);
    w.key("policy");
    if (!e.session.policy_text.empty())
      w.raw(e.session.policy_text);
    else
      w.raw(e.session.policy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    w.key("backends");
    w.beginArray();
    for (const auto& b : e.session.backends) w.string(b);
    w.endArray();
    if (!e.session.backend_matrix.is_null()) {
      w.key("backend_matrix");
      w.raw(e.session.backend_matrix.dump(-1, ' ', false,
                                          nlohmann::json::error_handler_t::replace));
    }
    writeSelfProtected(w, text, e.session.self_protected);
    writeEnvironment(w, e.session.environment);
    putString(w, "agent_version", session.agent_version);
    w.memberNumber("supervisor_pid", getpid());
  }
  if (e.session.has_exit) {
    w.key("exit");
    w.beginObject();
    if (e.session.exit.signal) {
      w.key("code");
      w.null();
      w.member("signal", signalName(e.session.exit.signal));
      w.key("core_dumped");
      w.boolean(e.session.exit.core_dumped);
    } else {
      w.memberNumber("code", e.session.exit.code);
    }
    w.endObject();
  }
  if (e.session.has_counters) writeCounters(w, e.session.counters);
  w.endObject();
}

}  // namespace

ExitStatus ExitStatus::fromWaitStatus(int wait_status) {
  ExitStatus s;
  if (WIFEXITED(wait_status)) {
    s.code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    s.signal = WTERMSIG(wait_status);
    s.core_dumped = WCOREDUMP(wait_status);
  }
  return s;
}

size_t formatRfc3339To(char (&buf)[kRfc3339Size], timespec time) {
  // gmtime_r and the date digits only change once a second; a busy session
  // emits thousands of events per second, so cache the "YYYY-MM-DDTHH:MM:SS".
  thread_local time_t cached_secs = -1;
  thread_local char cached[20];
  long nsec = time.tv_nsec;
  if (nsec < 0 || nsec >= 1000000000L) nsec = 0;
  if (time.tv_sec != cached_secs) {
    struct tm tm {};
    time_t secs = time.tv_sec;
    gmtime_r(&secs, &tm);
    char tmp[64];
    std::snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::memcpy(cached, tmp, 19);
    cached_secs = time.tv_sec;
  }
  std::memcpy(buf, cached, 19);
  buf[19] = '.';
  for (int i = 28; i >= 20; --i) {
    buf[i] = char('0' + nsec % 10);
    nsec /= 10;
  }
  buf[29] = 'Z';
  return 30;
}

std::string formatRfc3339(timespec time) {
  char buf[kRfc3339Size];
  return std::string(buf, formatRfc3339To(buf, time));
}

std::vector<std::string> openFlagNames(int flags) {
  std::vector<std::string> out;
  openFlagNamesTo(flags, [&](std::string_view n) { out.emplace_back(n); });
  return out;
}

std::vector<std::string> flagNames(std::string_view operation, int flags) {
  std::vector<std::string> out;
  forEachFlagName(operation, flags, [&](std::string_view n) { out.emplace_back(n); });
  return out;
}

std::string errnoName(int err) {
  if (err == 0) return {};
  const char* name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

bool isValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8SequenceLength(s, i);
    if (!len) return false;
    i += len;
  }
  return true;
}

std::string toValidUtf8(std::string_view s) {
  if (isValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8SequenceLength(s, i);
    if (len) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      ++i;
    }
  }
  return out;
}

void base64Append(std::string& out, std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) |
                 uint8_t(bytes[i + 2]);
    const char quad[4] = {kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63],
                          kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
    out.append(quad, 4);
  }
  size_t rest = bytes.size() - i;
  if (rest) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  base64Append(out, bytes);
  return out;
}

std::string readBootId() {
  char buf[64] = {};
  UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string id(buf, size_t(n));
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

std::string_view archName(uint32_t audit_arch) {
  switch (audit_arch) {
    case AUDIT_ARCH_X86_64: return "x86_64";
    case AUDIT_ARCH_I386: return "i386";
    case AUDIT_ARCH_AARCH64: return "aarch64";
    case AUDIT_ARCH_ARM: return "arm";
    case AUDIT_ARCH_RISCV64: return "riscv64";
    default: return {};
  }
}

std::string newSessionId() {
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // no entropy source: fall through with what we have mixed below
    }
    got += size_t(n);
  }
  if (got < sizeof bytes) {
    // Never expected on Linux >= 3.17; keep ids distinct per process anyway.
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t mix[2] = {uint64_t(ts.tv_sec) ^ (uint64_t(getpid()) << 32), uint64_t(ts.tv_nsec)};
    std::memcpy(bytes, mix, sizeof bytes);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

void AuditEvent::reset() {
  for (std::string* text : {&category, &operation, &syscall, &decision, &enforced_by, &rule_id,
                            &rule_reason, &rule_name, &file.path, &file.path2, &exec.path,
                            &network.family, &network.proto, &network.ip, &network.unix_path,
                            &target.comm})
    text->clear();
  syscall_nr = -1;
  arch = 0;
  err = 0;
  default_rule = false;
  truncated = false;
  process = nullptr;
  file.flags = -1;
  file.mode = -1;
  exec.argv.clear();
  network.port = -1;
  target.pid = -1;
  session = {};
}

void encodeEventTo(std::string& out, const AuditEvent& e, const SessionInfo& session,
                   uint64_t seq, timespec time) {
  const size_t start = out.size();
  try {
    JsonWriter w(out);
    EventText text(session.redact);
    w.beginObject();
    w.member("schema_version", kAuditSchemaVersion);
    w.key("seq");
    w.unsignedNumber(seq);
    writeHeader(w, session, time, "", seq);
    putString(w, "category", e.category);
    putString(w, "operation", e.operation);
    const bool is_session = e.category == "session";
    if (!e.syscall.empty() || e.syscall_nr >= 0) {
      w.key("syscall");
      w.beginObject();
      w.key("name");
      e.syscall.empty() ? w.null() : void(w.string(e.syscall));
      w.key("nr");
      e.syscall_nr >= 0 ? w.number(e.syscall_nr) : w.null();
      w.key("arch");
      const std::string_view arch = archName(e.arch);
      arch.empty() ? w.null() : void(w.string(arch));
      w.endObject();
    }
    if (!e.decision.empty()) putString(w, "decision", e.decision);
    if (!e.enforced_by.empty()) putString(w, "enforced_by", e.enforced_by);
    if (!is_session) {
      w.key("errno");
      writeErrno(w, e.err);
    }
    if (!e.rule_id.empty() || e.default_rule) {
      w.key("rule");
      w.beginObject();
      putString(w, "id", e.rule_id);
      if (!e.rule_name.empty()) putString(w, "name", e.rule_name);
      putString(w, "reason", e.rule_reason);
      if (e.default_rule) {
        w.key("default_rule");
        w.boolean(true);
      }
      w.endObject();
    }
    if (!session.policy_name.empty() || !session.policy_sha256.empty()) {
      w.key("policy");
      w.beginObject();
      putString(w, "name", session.policy_name);
      putString(w, "sha256", session.policy_sha256);
      w.endObject();
    }
    if (e.process) {
      writeProcess(w, text, *e.process);
      w.key("parent");
      w.beginObject();
      w.key("pid");
      e.process->ppid >= 0 ? w.number(e.process->ppid) : w.null();
      putString(w, "exe", text.path(e.process->parent_exe));
      w.endObject();
    }
    if (!e.file.path.empty() || !e.file.path2.empty() || e.file.flags >= 0 || e.file.mode >= 0) {
      w.key("file");
      w.beginObject();
      if (!e.file.path.empty()) putString(w, "path", text.path(e.file.path));
      if (!e.file.path2.empty()) putString(w, "path2", text.path(e.file.path2));
      if (e.file.flags >= 0) {
        w.key("flags");
        writeFlagNames(w, e.operation, e.file.flags);
      }
      if (e.file.mode >= 0) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04o", unsigned(e.file.mode));
        w.member("mode", buf);
      }
      w.endObject();
    }
    if (!e.exec.path.empty() || !e.exec.argv.empty()) {
      w.key("exec");
      w.beginObject();
      putString(w, "path", text.path(e.exec.path));
      putArgv(w, text, "argv", e.exec.argv);
      w.endObject();
    }
    const auto& n = e.network;
    if (!n.family.empty() || !n.proto.empty() || !n.ip.empty() || !n.unix_path.empty() ||
        n.port >= 0) {
      w.key("network");
      w.beginObject();
      if (!n.family.empty()) putString(w, "family", n.family);
      if (!n.proto.empty()) putString(w, "proto", n.proto);
      if (!n.ip.empty()) putString(w, "ip", n.ip);
      if (n.port >= 0) w.memberNumber("port", n.port);
      if (!n.unix_path.empty()) putString(w, "unix_path", text.path(n.unix_path));
      w.endObject();
    }
    writeTarget(w, e);
    if (is_session) writeSessionPart(w, text, e, session);
    writeTruncated(w, e, text);
    w.endObject();
  } catch (const std::exception& ex) {
    // Keep the seq so the loss is visible and explained rather than a gap.
    out.resize(start);
    JsonWriter w(out);
    w.beginObject();
    w.member("schema_version", kAuditSchemaVersion);
    w.key("seq");
    w.unsignedNumber(seq);
    w.key("time");
    writeTime(w, time);
    w.member("encode_error", ex.what());
    w.endObject();
  }
}

std::string encodeEvent(const AuditEvent& event, const SessionInfo& session, uint64_t seq,
                        timespec time) {
  std::string out;
  encodeEventTo(out, event, session, seq, time);
  return out;
}

std::string encodeDropped(const SessionInfo& session, timespec time, uint64_t count,
                          uint64_t first_seq, uint64_t last_seq, uint64_t total) {
  std::string out;
  JsonWriter w(out);
  w.beginObject();
  w.member("schema_version", kAuditSchemaVersion);
  writeHeader(w, session, time, "dropped-", first_seq);
  w.member("category", "session");
  w.member("operation", "dropped");
  w.key("dropped");
  w.beginObject();
  w.key("count");
  w.unsignedNumber(count);
  w.key("first_seq");
  w.unsignedNumber(first_seq);
  w.key("last_seq");
  w.unsignedNumber(last_seq);
  w.key("total");
  w.unsignedNumber(total);
  w.endObject();
  w.endObject();
  return out;
}

AuditEvent sessionStartEvent(std::vector<std::string> command, nlohmann::ordered_json policy,
                             std::vector<std::string> backends,
                             nlohmann::ordered_json backend_matrix,
                             std::vector<SelfProtectedPath> self_protected,
                             SessionEnvironment environment) {
  AuditEvent e;
  e.category = "session";
  e.operation = "start";
  e.session.command = std::move(command);
  e.session.policy = std::move(policy);
  e.session.backends = std::move(backends);
  e.session.backend_matrix = std::move(backend_matrix);
  e.session.self_protected = std::move(self_protected);
  e.session.environment = std::move(environment);
  return e;
}

AuditEvent sessionEndEvent(ExitStatus exit, const AuditCounters& counters) {
  AuditEvent e;
  e.category = "session";
  e.operation = "end";
  e.session.has_exit = true;
  e.session.exit = exit;
  e.session.has_counters = true;
  e.session.counters = counters;
  return e;
}

AuditEvent policyReloadEvent(nlohmann::ordered_json policy, std::string sha256) {
  AuditEvent e;
  e.category = "session";
  e.operation = "reload";
  e.session.policy = std::move(policy);
  e.session.policy_sha256 = std::move(sha256);
  return e;
}

}  // namespace sv::supervisor
