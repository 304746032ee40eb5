// Reads a backend's outcomes and audit trail (observed.h). The audit schema
// is docs/audit-events.md; only the fields the comparison needs are read.
#include "tests/differential/observed.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace sv::differential {
namespace {

using nlohmann::json;

std::string str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The path or destination an event's rule was judged on (EventKey::subject).
std::string subject(const json& e, const std::string& category) {
  if (category == "file") return str(e.value("file", json::object()), "path");
  if (category == "exec") return str(e.value("exec", json::object()), "path");
  const json& n = e.value("network", json::object());
  if (str(n, "family") == "unix") return str(n, "unix_path");
  return str(n, "ip") + " " + std::to_string(n.value("port", 0));
}

// What an event is about, in the oracle's words (expected.cpp).
std::string what(const json& e, const std::string& category) {
  if (category == "file") {
    const json& f = e.value("file", json::object());
    std::string s = "file " + str(e, "operation") + " " + str(f, "path");
    if (const std::string p2 = str(f, "path2"); !p2.empty()) s += " " + p2;
    const json flags = f.value("flags", json::array());
    if (std::find(flags.begin(), flags.end(), "O_PATH") != flags.end()) s += " (O_PATH)";
    return s;
  }
  if (category == "exec") return "exec " + str(e.value("exec", json::object()), "path");
  const json& n = e.value("network", json::object());
  if (str(n, "family") == "unix")
    return "network " + str(e, "operation") + " unix " + str(n, "unix_path");
  return "network " + str(e, "operation") + " " + str(n, "proto") + " " + str(n, "ip") + " " +
         std::to_string(n.value("port", 0));
}

}  // namespace

Result<std::vector<int>> readOutcomes(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{ENOENT, "open " + path};
  std::vector<int> out;
  long index = 0;
  int err = 0;
  while (in >> index >> err) {
    if (index != static_cast<long>(out.size()))
      return Error{0, path + ": outcome " + std::to_string(index) + " out of order"};
    out.push_back(err);
  }
  return out;
}

Result<AuditTrail> readAuditTrail(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{ENOENT, "open " + path};
  AuditTrail trail;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded()) return Error{0, path + ": not JSON: " + line.substr(0, 200)};
    if (auto d = e.find("dropped"); d != e.end() && d->is_object())
      trail.dropped += d->value("count", size_t{0});
    if (str(e, "operation") == "end")
      trail.unrecorded += e.value("session", json::object())
                              .value("counters", json::object())
                              .value("unrecorded", size_t{0});
    const std::string category = str(e, "category");
    if (category != "file" && category != "exec" && category != "network") continue;
    trail.enforced_by[str(e, "enforced_by")]++;
    trail.decisions.push_back(
        {what(e, category), str(e, "decision"), str(e.value("rule", json::object()), "id"),
         subject(e, category)});
  }
  return trail;
}

}  // namespace sv::differential
