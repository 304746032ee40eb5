// Test helpers shared by the AuditLog and sink unit tests: a temporary
// directory removed with its contents, and a whole file as a string.
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "common/result.h"

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

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace sv::test
