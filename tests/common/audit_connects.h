// auditedConnects(): the network events of a JSON-lines audit file that name
// one destination, in file order, reduced to what the end-to-end network
// tests assert on: the decision, the errno returned, the deciding rule's id,
// the process's profile and pid. Lines that are not JSON and other categories
// are skipped.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sv::test {

struct AuditedConnect {
  std::string decision, errno_name, rule, profile;  // errno_name: "" when null (allowed)
  int pid = 0;
};

inline std::vector<AuditedConnect> auditedConnects(const std::string& audit_path,
                                                   const std::string& ip, int port) {
  using nlohmann::json;
  std::vector<AuditedConnect> seen;
  std::ifstream in(audit_path);
  for (std::string line; std::getline(in, line);) {
    const json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("category", "") != "network") continue;
    const json n = e.value("network", json::object());
    if (n.value("ip", "") != ip || n.value("port", 0) != port) continue;
    const json process = e.value("process", json::object());
    const json err = e.value("errno", json());
    seen.push_back({e.value("decision", ""), err.is_string() ? err.get<std::string>() : "",
                    e.value("rule", json::object()).value("id", ""), process.value("profile", ""),
                    process.value("pid", 0)});
  }
  return seen;
}

}  // namespace sv::test
