// Test helpers shared by the AuditLog and sink unit tests: a temporary
// directory removed with its contents, a file-open decision event, and a
// whole file as a string (tests/common/run_command.h), and a check that a
// sink delivered seqs 1..n once each, in order, that says what differs.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/result.h"
#include "supervisor/audit/audit_event.h"
#include "tests/common/run_command.h"

namespace sv::test {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sv-audit-test-XXXXXX";
    SV_CHECK(mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An open of `path` decided `verdict` ("allow", "deny") by user-notify.
inline supervisor::AuditEvent fileDecision(const std::string& verdict, const std::string& path,
                                           const std::string& rule_id = "") {
  supervisor::AuditEvent e;
  e.category = "file";
  e.operation = "open";
  e.decision = verdict;
  e.enforced_by = "seccomp";
  e.rule_id = rule_id;
  e.file.path = path;
  e.file.flags = O_RDONLY;
  return e;
}

// Success when `seqs` is exactly 1..n; otherwise how it differs: its length,
// the first position out of place, and the first seqs missing or repeated
// (a vector diff of 100,000 numbers shows only its first 32).
inline testing::AssertionResult seqsAreOneTo(const std::vector<uint64_t>& seqs, uint64_t n) {
  bool exact = seqs.size() == n;
  for (size_t i = 0; exact && i < n; ++i) exact = seqs[i] == i + 1;
  if (exact) return testing::AssertionSuccess();
  std::map<uint64_t, size_t> times;
  for (uint64_t s : seqs) ++times[s];
  std::ostringstream why;
  why << seqs.size() << " seqs for 1.." << n;
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i] != i + 1) {
      why << "; first out of place at [" << i << "]: " << seqs[i];
      break;
    }
  auto list = [&](const char* what, auto&& pick) {
    size_t shown = 0, total = 0;
    std::ostringstream some;
    for (uint64_t s = 1; s <= n; ++s)
      if (pick(s) && total++ < 10) some << (shown++ ? "," : "") << s;
    if (total) why << "; " << what << " (" << total << "): " << some.str() << (total > shown ? ",..." : "");
  };
  list("missing", [&](uint64_t s) { return times.count(s) == 0; });
  list("repeated", [&](uint64_t s) { return times.count(s) && times[s] > 1; });
  size_t beyond = 0;
  for (const auto& [s, count] : times) beyond += (s == 0 || s > n) ? count : 0;
  if (beyond) why << "; " << beyond << " outside 1.." << n;
  return testing::AssertionFailure() << why.str();
}

}  // namespace sv::test
