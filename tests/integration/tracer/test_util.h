// Helpers for tracer integration tests: run code in a forked child (seccomp
// filters and Landlock rulesets cannot be removed) and skip without root.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace sv::tracer::testing {

// Forks, runs fn() in the child and _exits with its return value; returns the
// raw wait status. fn must only use async-signal-safe calls (no gtest macros).
template <typename Fn>
int runInChild(Fn&& fn) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(fn());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

inline std::string describeStatus(int status) {
  if (status == -1) return "fork/wait failed";
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// A temporary directory removed (recursively) at scope end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sv-tracer-test-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sv::tracer::testing

#define SV_REQUIRE_ROOT()                                                 \
  do {                                                                    \
    if (geteuid() != 0) GTEST_SKIP() << "needs root: euid=" << geteuid(); \
  } while (0)

#define EXPECT_CHILD_EXIT0(status) \
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describeStatus(status)
