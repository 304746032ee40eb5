// The exec daemon's frames and messages; see protocol.h.
#include "supervisor/serve/protocol.h"

#include <signal.h>

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace sv::supervisor::serve {
namespace {

using json = nlohmann::json;

Error bad(std::string what) { return Error{0, std::move(what)}; }

// The signals `supervise exec` forwards: those `supervise --` forwards to
// its command (session.cpp, launchCommand).
bool forwardable(int signo) {
  return signo == SIGINT || signo == SIGTERM || signo == SIGHUP || signo == SIGQUIT;
}

bool hasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Every key of `object` must be one of `known`: a misspelled field is an
// error, not a default silently applied.
Status onlyKnownKeys(const json& object, std::initializer_list<std::string_view> known) {
  for (const auto& [key, _] : object.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || key == k;
    if (!found) return bad("unknown field \"" + key + "\"");
  }
  return {};
}

Result<std::string> stringField(const json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end()) {
    if (required) return bad(std::string("missing field \"") + name + "\"");
    return std::string();
  }
  if (!it->is_string()) return bad(std::string("\"") + name + "\" must be a string");
  std::string s = it->get<std::string>();
  if (hasNul(s)) return bad(std::string("\"") + name + "\" holds a NUL byte");
  return s;
}

// An integer member within [lo, hi], or `fallback` when absent. A float, a
// string or an integer out of range is an error, never converted.
Result<int64_t> intField(const json& j, const char* name, int64_t lo, int64_t hi,
                         std::optional<int64_t> fallback) {
  auto it = j.find(name);
  if (it == j.end()) {
    if (fallback) return *fallback;
    return bad(std::string("missing field \"") + name + "\"");
  }
  const bool in_range =
      (it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() >= lo &&
       it->get<int64_t>() <= hi) ||
      (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t(hi) && hi >= 0);
  if (!in_range)
    return bad(std::string("\"") + name + "\" must be an integer from " + std::to_string(lo) +
               " to " + std::to_string(hi));
  return it->is_number_unsigned() ? int64_t(it->get<uint64_t>()) : it->get<int64_t>();
}

Result<ExecRequest> decodeExec(const json& j) {
  if (auto st = onlyKnownKeys(j, {"type", "version", "argv", "cwd", "env", "profile",
                                  "timeout_ms", "umask"});
      !st)
    return st.error();
  auto version = intField(j, "version", 0, INT32_MAX, std::nullopt);
  if (!version) return version.error();
  if (*version != kProtocolVersion)
    return bad("protocol version " + std::to_string(*version) + " (this daemon speaks " +
               std::to_string(kProtocolVersion) + ")");
  ExecRequest r;
  auto argv = j.find("argv");
  if (argv == j.end() || !argv->is_array() || argv->empty())
    return bad("\"argv\" must be a non-empty array of strings");
  for (const auto& a : *argv) {
    if (!a.is_string()) return bad("\"argv\" must be a non-empty array of strings");
    r.argv.push_back(a.get<std::string>());
    if (hasNul(r.argv.back())) return bad("an \"argv\" element holds a NUL byte");
  }
  if (r.argv[0].empty()) return bad("\"argv\"[0] is empty");
  auto cwd = stringField(j, "cwd", true);
  if (!cwd) return cwd.error();
  r.cwd = std::move(*cwd);
  if (r.cwd.empty() || r.cwd[0] != '/') return bad("\"cwd\" must be an absolute path");
  if (auto env = j.find("env"); env != j.end()) {
    if (!env->is_object()) return bad("\"env\" must be an object of strings");
    for (const auto& [name, value] : env->items()) {
      if (!value.is_string()) return bad("\"env\"." + name + " must be a string");
      if (name.empty() || name.find('=') != std::string::npos || hasNul(name))
        return bad("\"env\" has an invalid variable name");
      std::string v = value.get<std::string>();
      if (hasNul(v)) return bad("\"env\"." + name + " holds a NUL byte");
      r.env.emplace_back(name, std::move(v));
    }
  }
  auto profile = stringField(j, "profile", false);
  if (!profile) return profile.error();
  r.profile = std::move(*profile);
  auto timeout = intField(j, "timeout_ms", 0, int64_t(kMaxTimeoutMs), 0);
  if (!timeout) return timeout.error();
  r.timeout_ms = uint64_t(*timeout);
  auto umask = intField(j, "umask", 0, 0777, 022);
  if (!umask) return umask.error();
  r.umask = uint32_t(*umask);
  return r;
}

// The one adapter between nlohmann's exceptions and Result.
template <typename T, typename Body>
Result<T> guarded(std::string_view what, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return bad(std::string(what) + ": " + e.what());
  }
}

}  // namespace

std::string frame(std::string_view body) {
  std::string out(4, '\0');
  const uint32_t n = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(body);
  return out;
}

std::string encodeRequest(const ExecRequest& request) {
  json env = json::object();
  for (const auto& [name, value] : request.env) env[name] = value;
  json j = {{"type", "exec"},
            {"version", kProtocolVersion},
            {"argv", request.argv},
            {"cwd", request.cwd},
            {"env", env},
            {"umask", request.umask}};
  if (!request.profile.empty()) j["profile"] = request.profile;
  if (request.timeout_ms) j["timeout_ms"] = request.timeout_ms;
  // Invalid UTF-8 (a file name in argv) is passed through, not refused.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encodeSignal(int signo) { return json{{"type", "signal"}, {"signal", signo}}.dump(); }

std::string encodeReply(const Reply& reply) {
  json j = {{"type", reply.type}};
  if (reply.type == "started") {
    j["command_id"] = reply.command_id;
    j["session_id"] = reply.session_id;
    j["policy_name"] = reply.policy_name;
    j["policy_sha256"] = reply.policy_sha256;
  } else if (reply.type == "exit") {
    j["status"] = reply.status;
    j["signal"] = reply.signal;
    j["timed_out"] = reply.timed_out;
  } else {
    j["status"] = reply.status;
    j["message"] = reply.message;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<ClientMessage> decodeClientMessage(std::string_view body) {
  return guarded<ClientMessage>("malformed request", [&]() -> Result<ClientMessage> {
    json j = json::parse(body);
    if (!j.is_object()) return bad("a message must be a JSON object");
    auto type = stringField(j, "type", true);
    if (!type) return type.error();
    ClientMessage m;
    if (*type == "exec") {
      auto r = decodeExec(j);
      if (!r) return r.error();
      m.exec = std::move(*r);
      return m;
    }
    if (*type == "signal") {
      if (auto st = onlyKnownKeys(j, {"type", "signal"}); !st) return st.error();
      auto s = intField(j, "signal", 1, 64, std::nullopt);
      if (!s || !forwardable(int(*s)))
        return bad("\"signal\" must be SIGINT, SIGTERM, SIGHUP or SIGQUIT");
      m.signal = int(*s);
      return m;
    }
    return bad("unknown message type \"" + *type + "\"");
  });
}

Result<Reply> decodeReply(std::string_view body) {
  return guarded<Reply>("malformed reply", [&]() -> Result<Reply> {
    json j = json::parse(body);
    if (!j.is_object()) return bad("a reply must be a JSON object");
    Reply r;
    r.type = j.value("type", "");
    if (r.type != "started" && r.type != "exit" && r.type != "error")
      return bad("unknown reply type \"" + r.type + "\"");
    r.command_id = j.value("command_id", "");
    r.session_id = j.value("session_id", "");
    r.policy_name = j.value("policy_name", "");
    r.policy_sha256 = j.value("policy_sha256", "");
    auto status = intField(j, "status", 0, 255, 0);
    auto signal = intField(j, "signal", 0, 64, 0);
    if (!status || !signal) return bad("\"status\" or \"signal\" out of range");
    r.status = int(*status);
    r.signal = int(*signal);
    r.timed_out = j.value("timed_out", false);
    r.message = j.value("message", "");
    return r;
  });
}

std::string encodeHandOff(const HandOff& handoff) {
  json j = {{"type", "handoff"},
            {"command_id", handoff.command_id},
            {"client_pid", handoff.client_pid},
            {"client_uid", handoff.client_uid},
            {"request", json::parse(encodeRequest(handoff.request))}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<HandOff> decodeHandOff(std::string_view body) {
  return guarded<HandOff>("malformed hand-off", [&]() -> Result<HandOff> {
    json j = json::parse(body);
    if (!j.is_object()) return bad("a hand-off must be a JSON object");
    if (auto st = onlyKnownKeys(j, {"type", "command_id", "client_pid", "client_uid", "request"});
        !st)
      return st.error();
    auto type = stringField(j, "type", true);
    if (!type) return type.error();
    if (*type != "handoff") return bad("not a hand-off: \"" + *type + "\"");
    HandOff h;
    auto id = stringField(j, "command_id", true);
    auto pid = intField(j, "client_pid", -1, INT32_MAX, std::nullopt);
    auto uid = intField(j, "client_uid", -1, UINT32_MAX, std::nullopt);
    if (!id) return id.error();
    if (!pid) return pid.error();
    if (!uid) return uid.error();
    h.command_id = std::move(*id);
    h.client_pid = int(*pid);
    h.client_uid = *uid;
    auto request = j.find("request");
    if (request == j.end() || !request->is_object()) return bad("\"request\" must be an object");
    auto type_of_request = stringField(*request, "type", true);
    if (!type_of_request || *type_of_request != "exec") return bad("\"request\" must be an exec");
    auto r = decodeExec(*request);
    if (!r) return r.error();
    h.request = std::move(*r);
    return h;
  });
}

Result<std::optional<std::string>> FrameReader::next() {
  if (buffer_.size() < 4) return std::optional<std::string>();
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(static_cast<unsigned char>(buffer_[i])) << (8 * i);
  if (n > max_bytes_)
    return bad("message of " + std::to_string(n) + " bytes (at most " +
               std::to_string(max_bytes_) + ")");
  if (buffer_.size() < 4 + size_t(n)) return std::optional<std::string>();
  std::string body = buffer_.substr(4, n);
  buffer_.erase(0, 4 + size_t(n));
  return std::optional<std::string>(std::move(body));
}

}  // namespace sv::supervisor::serve
