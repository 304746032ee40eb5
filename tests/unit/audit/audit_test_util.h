// Test helpers shared by the AuditLog and sink unit tests: a temporary
// directory removed with its contents, a file-open decision event, and a
// whole file as a string (tests/common/run_command.h).
#pragma once

#include <fcntl.h>

#include <cstdlib>
#include <string>

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

}  // namespace sv::test
