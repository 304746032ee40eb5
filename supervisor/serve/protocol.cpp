// The exec daemon's frames and messages; see protocol.h.
#include "supervisor/serve/protocol.h"

#include <signal.h>

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

Result<ExecRequest> decodeExec(const json& j) {
  if (auto st = onlyKnownKeys(j, {"type", "version", "argv", "cwd", "env", "profile",
                                  "timeout_ms", "umask"});
      !st)
    return st.error();
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer())
    return bad("missing or non-integer \"version\"");
  if (version->get<int64_t>() != kProtocolVersion)
    return bad("protocol version " + version->dump() + " (this daemon speaks " +
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
  if (auto t = j.find("timeout_ms"); t != j.end()) {
    if (!t->is_number_unsigned() || t->get<uint64_t>() > kMaxTimeoutMs)
      return bad("\"timeout_ms\" must be an integer from 0 to " + std::to_string(kMaxTimeoutMs));
    r.timeout_ms = t->get<uint64_t>();
  }
  if (auto m = j.find("umask"); m != j.end()) {
    if (!m->is_number_unsigned() || m->get<uint64_t>() > 0777)
      return bad("\"umask\" must be an integer from 0 to 0777");
    r.umask = m->get<uint32_t>();
  }
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
      auto s = j.find("signal");
      if (s == j.end() || !s->is_number_integer() || !forwardable(s->get<int>()))
        return bad("\"signal\" must be SIGINT, SIGTERM, SIGHUP or SIGQUIT");
      m.signal = s->get<int>();
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
    r.status = j.value("status", 0);
    r.signal = j.value("signal", 0);
    r.timed_out = j.value("timed_out", false);
    r.message = j.value("message", "");
    return r;
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
