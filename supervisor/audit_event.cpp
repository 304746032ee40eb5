// Native JSON encoding of audit events (schema 1.0).
//
// nlohmann::json is the one library here that throws, so every use of it sits
// inside encodeEvent()/encodeDropped(), which catch and fall back to a minimal
// line: an audit event is never silently lost to an encoding problem. Strings
// are made valid UTF-8 before they reach nlohmann (see audit_event.h), and the
// dump still uses error_handler_t::replace as a second line of defence.
#include "supervisor/audit_event.h"

#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace sv::supervisor {
namespace {

using Json = nlohmann::ordered_json;  // keeps schema_version, seq, time first

// Writes key (and key_b64 when the bytes are not UTF-8).
void putString(Json& obj, const std::string& key, std::string_view value) {
  if (isValidUtf8(value)) {
    obj[key] = value;
  } else {
    obj[key] = toValidUtf8(value);
    obj[key + "_b64"] = base64Encode(value);
  }
}

// argv: one lossy array, plus a full parallel base64 array if any element is
// not UTF-8 (parallel so indexes match).
void putArgv(Json& obj, const std::string& key, const std::vector<std::string>& argv) {
  Json arr = Json::array();
  bool all_valid = true;
  for (const auto& a : argv) {
    if (isValidUtf8(a)) {
      arr.push_back(a);
    } else {
      all_valid = false;
      arr.push_back(toValidUtf8(a));
    }
  }
  obj[key] = std::move(arr);
  if (!all_valid) {
    Json b64 = Json::array();
    for (const auto& a : argv) b64.push_back(base64Encode(a));
    obj[key + "_b64"] = std::move(b64);
  }
}

Json idOrNull(uint32_t id) { return id == ProcessInfo::kUnknownId ? Json(nullptr) : Json(id); }

Json encodeProcess(const ProcessInfo& p) {
  Json o = Json::object();
  o["pid"] = p.pid;
  o["tid"] = p.tid;
  o["ppid"] = p.ppid >= 0 ? Json(p.ppid) : Json(nullptr);
  o["start_time"] = p.start_time ? Json(p.start_time) : Json(nullptr);
  o["uid"] = idOrNull(p.uid);
  o["euid"] = idOrNull(p.euid);
  o["gid"] = idOrNull(p.gid);
  putString(o, "comm", p.comm);
  putString(o, "exe", p.exe);
  putArgv(o, "argv", p.argv);
  putString(o, "cwd", p.cwd);
  putString(o, "profile", p.profile);
  return o;
}

Json stringArray(const std::vector<std::string>& v) {
  Json arr = Json::array();
  for (const auto& s : v) arr.push_back(toValidUtf8(s));
  return arr;
}

Json encodeCounters(const AuditCounters& c) {
  Json o = Json::object();
  o["decisions"] = c.decisions;
  o["denials"] = c.denials;
  o["would_deny"] = c.would_deny;
  o["dropped"] = c.dropped;
  return o;
}

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

void putHeader(Json& j, const SessionInfo& session, timespec time) {
  j["time"] = formatRfc3339(time);
  putString(j, "session_id", session.session_id);
  putString(j, "host", session.host);
}

std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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

std::string hexBits(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

template <size_t N>
std::vector<std::string> bitNames(unsigned flags, const FlagName (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& f : table) {
    if (flags & unsigned(f.bit)) {
      out.emplace_back(f.name);
      flags &= ~unsigned(f.bit);
    }
  }
  if (flags) out.push_back(hexBits(flags));  // bits we have no name for stay visible
  return out;
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

std::string formatRfc3339(timespec time) {
  struct tm tm {};
  time_t secs = time.tv_sec;
  long nsec = time.tv_nsec;
  if (nsec < 0 || nsec >= 1000000000L) nsec = 0;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, nsec);
  return buf;
}

std::vector<std::string> openFlagNames(int flags) {
  unsigned f = unsigned(flags);
  std::vector<std::string> out;
  switch (f & 3u) {
    case 0:
      out.emplace_back("O_RDONLY");
      break;
    case 1:
      out.emplace_back("O_WRONLY");
      break;
    case 2:
      out.emplace_back("O_RDWR");
      break;
    default:
      out.emplace_back("O_ACCMODE");
      break;  // 3: invalid, but callers can pass it
  }
  f &= ~3u;
  if (f & unsigned(kTmpfileBit)) {
    out.emplace_back("O_TMPFILE");
    f &= ~unsigned(kTmpfileBit | 00200000);
  }
  if (f & unsigned(kSyncBit)) {
    out.emplace_back("O_SYNC");
    f &= ~unsigned(kSyncBit | 00010000);
  }
  for (auto& n : bitNames(f, kOpenFlags)) out.push_back(std::move(n));
  return out;
}

std::vector<std::string> flagNames(std::string_view operation, int flags) {
  if (operation == "rename") return bitNames(unsigned(flags), kRenameFlags);
  if (operation == "setxattr") return bitNames(unsigned(flags), kXattrFlags);
  if (operation == "unlink" || operation == "rmdir" || operation == "link" ||
      operation == "chmod" || operation == "chown" || operation == "utimes" ||
      operation == "exec") {
    return bitNames(unsigned(flags), kAtFlags);
  }
  return openFlagNames(flags);  // open, create, write, read, truncate, mkdir, ...
}

std::string errnoName(int err) {
  if (err == 0) return {};
  const char* name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and values past U+10FFFF are invalid.
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string toValidUtf8(std::string_view s) {
  if (isValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    // Take the longest valid sequence (1..4 bytes) starting here, else one bad byte.
    size_t take = 0;
    for (size_t len = 1; len <= 4 && i + len <= s.size(); ++len) {
      if (isValidUtf8(s.substr(i, len))) {
        take = len;
        break;
      }
    }
    if (take) {
      out.append(s.substr(i, take));
      i += take;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      ++i;
    }
  }
  return out;
}

std::string base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) |
                 uint8_t(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
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
  return out;
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

std::string encodeEvent(const AuditEvent& e, const SessionInfo& session, uint64_t seq,
                        timespec time) {
  try {
    Json j = Json::object();
    j["schema_version"] = kAuditSchemaVersion;
    j["seq"] = seq;
    putHeader(j, session, time);
    putString(j, "category", e.category);
    putString(j, "operation", e.operation);
    const bool is_session = e.category == "session";
    if (!e.syscall.empty() || e.syscall_nr >= 0) {
      Json sc = Json::object();
      sc["name"] = e.syscall.empty() ? Json(nullptr) : Json(toValidUtf8(e.syscall));
      sc["nr"] = e.syscall_nr >= 0 ? Json(e.syscall_nr) : Json(nullptr);
      j["syscall"] = std::move(sc);
    }
    if (!e.decision.empty()) putString(j, "decision", e.decision);
    if (!e.enforced_by.empty()) putString(j, "enforced_by", e.enforced_by);
    if (!is_session) j["errno"] = e.err ? Json(errnoName(e.err)) : Json(nullptr);
    if (!e.rule_id.empty() || e.default_rule) {
      Json r = Json::object();
      putString(r, "id", e.rule_id);
      putString(r, "reason", e.rule_reason);
      if (e.default_rule) r["default_rule"] = true;
      j["rule"] = std::move(r);
    }
    if (!session.policy_name.empty() || !session.policy_sha256.empty()) {
      Json p = Json::object();
      putString(p, "name", session.policy_name);
      putString(p, "sha256", session.policy_sha256);
      j["policy"] = std::move(p);
    }
    if (e.process) j["process"] = encodeProcess(*e.process);
    if (!e.file.path.empty() || !e.file.path2.empty() || e.file.flags >= 0 || e.file.mode >= 0) {
      Json f = Json::object();
      if (!e.file.path.empty()) putString(f, "path", e.file.path);
      if (!e.file.path2.empty()) putString(f, "path2", e.file.path2);
      if (e.file.flags >= 0) f["flags"] = flagNames(e.operation, e.file.flags);
      if (e.file.mode >= 0) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04o", unsigned(e.file.mode));
        f["mode"] = buf;
      }
      j["file"] = std::move(f);
    }
    if (!e.exec.path.empty() || !e.exec.argv.empty()) {
      Json x = Json::object();
      putString(x, "path", e.exec.path);
      putArgv(x, "argv", e.exec.argv);
      j["exec"] = std::move(x);
    }
    const auto& n = e.network;
    if (!n.family.empty() || !n.proto.empty() || !n.ip.empty() || !n.unix_path.empty() ||
        n.port >= 0) {
      Json o = Json::object();
      if (!n.family.empty()) putString(o, "family", n.family);
      if (!n.proto.empty()) putString(o, "proto", n.proto);
      if (!n.ip.empty()) putString(o, "ip", n.ip);
      if (n.port >= 0) o["port"] = n.port;
      if (!n.unix_path.empty()) putString(o, "unix_path", n.unix_path);
      j["network"] = std::move(o);
    }
    if (is_session) {
      Json s = Json::object();
      if (e.operation == "start") {
        putArgv(s, "command", e.session.command);
        s["policy"] = Json(e.session.policy);
        s["backends"] = stringArray(e.session.backends);
        putString(s, "agent_version", session.agent_version);
        s["supervisor_pid"] = int(getpid());
      }
      if (e.session.has_exit) {
        Json x = Json::object();
        if (e.session.exit.signal) {
          x["code"] = nullptr;
          x["signal"] = signalName(e.session.exit.signal);
          x["core_dumped"] = e.session.exit.core_dumped;
        } else {
          x["code"] = e.session.exit.code;
        }
        s["exit"] = std::move(x);
      }
      if (e.session.has_counters) s["counters"] = encodeCounters(e.session.counters);
      if (!s.empty()) j["session"] = std::move(s);
    }
    return dump(j);
  } catch (const std::exception& ex) {
    // Keep the seq so the loss is visible and explained rather than a gap.
    try {
      Json j = Json::object();
      j["schema_version"] = kAuditSchemaVersion;
      j["seq"] = seq;
      j["time"] = formatRfc3339(time);
      j["encode_error"] = toValidUtf8(ex.what());
      return dump(j);
    } catch (...) {
      return std::string("{\"schema_version\":\"1.0\",\"seq\":") + std::to_string(seq) +
             ",\"encode_error\":\"unknown\"}";
    }
  }
}

std::string encodeDropped(const SessionInfo& session, timespec time, uint64_t count,
                          uint64_t first_seq, uint64_t last_seq, uint64_t total) {
  try {
    Json j = Json::object();
    j["schema_version"] = kAuditSchemaVersion;
    putHeader(j, session, time);
    j["category"] = "session";
    j["operation"] = "dropped";
    Json d = Json::object();
    d["count"] = count;
    d["first_seq"] = first_seq;
    d["last_seq"] = last_seq;
    d["total"] = total;
    j["dropped"] = std::move(d);
    return dump(j);
  } catch (...) {
    return std::string("{\"schema_version\":\"1.0\",\"category\":\"session\",") +
           "\"operation\":\"dropped\",\"dropped\":{\"count\":" + std::to_string(count) +
           ",\"first_seq\":" + std::to_string(first_seq) +
           ",\"last_seq\":" + std::to_string(last_seq) + ",\"total\":" + std::to_string(total) +
           "}}";
  }
}

AuditEvent sessionStartEvent(std::vector<std::string> command, nlohmann::json policy_summary,
                             std::vector<std::string> backends) {
  AuditEvent e;
  e.category = "session";
  e.operation = "start";
  e.session.command = std::move(command);
  e.session.policy = std::move(policy_summary);
  e.session.backends = std::move(backends);
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

}  // namespace sv::supervisor
