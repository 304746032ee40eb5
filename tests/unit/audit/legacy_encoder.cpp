// The nlohmann-tree encoder as it was before the allocation-free JsonWriter
// encoder replaced it (schema 1.0), kept only as the reference the
// differential test compares the new encoder against byte for byte.
#include "tests/unit/audit/legacy_encoder.h"

#include <unistd.h>

namespace sv::supervisor::legacy {
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
  o["unrecorded"] = c.unrecorded;
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

}  // namespace

std::string legacyEncodeEvent(const AuditEvent& e, const SessionInfo& session, uint64_t seq,
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
        Json paths = Json::array();
        for (const auto& sp : e.session.self_protected) {
          Json o = Json::object();
          o["id"] = sp.id;
          putString(o, "path", sp.path);
          o["access"] = sp.access;
          paths.push_back(std::move(o));
        }
        s["self_protected"] = std::move(paths);
        const SessionEnvironment& env = e.session.environment;
        Json removed = Json::array();
        for (const auto& r : env.removed) {
          Json o = Json::object();
          putString(o, "name", r.name);
          o["rule"] = {{"id", r.rule_id}, {"reason", r.reason}};
          removed.push_back(std::move(o));
        }
        Json envj = Json::object();
        envj["applied"] = env.applied;
        envj[env.applied ? "removed" : "would_remove"] = std::move(removed);
        envj["set"] = stringArray(env.set);
        s["environment"] = std::move(envj);
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

}  // namespace sv::supervisor::legacy
