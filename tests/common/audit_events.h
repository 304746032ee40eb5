// readAuditEvents(): the JSON lines of an audit file, for the e2e tests of
// the real binary (their skip probe is host_features.h).
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/run_command.h"

namespace sv::test {

// The JSON lines of an audit file (a line that is not JSON fails the test).
inline std::vector<nlohmann::json> readAuditEvents(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "audit line is not JSON: " << line;
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace sv::test
