// Test helpers: split an RFC 6587 octet-counted byte stream into RFC 5424
// messages and take one apart (PRI, header fields, the sv@32473 structured
// data, the JSON MSG). Shared by the sink unit tests and the rsyslog
// end-to-end tests.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sv::test {

struct SyslogMessage {
  int pri = -1;
  std::string timestamp, host, app, procid, msgid;
  std::map<std::string, std::string> sd;  // the sv@32473 params
  nlohmann::json msg;                     // the JSON event
  bool ok = false;
};

// Whole frames only; a torn tail (connection cut mid-frame) is left out.
inline std::vector<std::string> splitOctetCounted(std::string_view stream) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < stream.size()) {
    const size_t sp = stream.find(' ', at);
    if (sp == std::string_view::npos) break;
    const size_t len = std::stoul(std::string(stream.substr(at, sp - at)));
    if (sp + 1 + len > stream.size()) break;
    out.emplace_back(stream.substr(sp + 1, len));
    at = sp + 1 + len;
  }
  return out;
}

inline SyslogMessage parseSyslog(std::string_view m) {
  SyslogMessage r;
  if (m.empty() || m[0] != '<') return r;
  const size_t gt = m.find('>');
  r.pri = std::stoi(std::string(m.substr(1, gt - 1)));
  if (m.substr(gt + 1, 2) != "1 ") return r;
  size_t at = gt + 3;
  auto token = [&](std::string& out) {
    const size_t sp = m.find(' ', at);
    out = std::string(m.substr(at, sp - at));
    at = sp + 1;
  };
  token(r.timestamp);
  token(r.host);
  token(r.app);
  token(r.procid);
  token(r.msgid);
  const std::string_view sd_open = "[sv@32473";
  if (m.substr(at, sd_open.size()) != sd_open) return r;
  at += sd_open.size();
  while (at < m.size() && m[at] == ' ') {
    const size_t eq = m.find('=', at);
    const std::string name(m.substr(at + 1, eq - at - 1));
    std::string value;
    size_t i = eq + 2;  // past ="
    for (; i < m.size() && m[i] != '"'; ++i) {
      if (m[i] == '\\') ++i;
      value += m[i];
    }
    r.sd[name] = value;
    at = i + 1;
  }
  if (m.substr(at, 2) != "] ") return r;
  r.msg = nlohmann::json::parse(m.substr(at + 2), nullptr, false);
  r.ok = !r.msg.is_discarded();
  return r;
}

}  // namespace sv::test
