// runCommand(): runs a program (usually the real `supervise` binary) for a
// test and collects its exit status and output.
//
// stdout and stderr go to files, not pipes: a backgrounded grandchild (or
// supervise's watchdog) inheriting a pipe would keep it open and hang the
// reader. The child can join a network namespace first, so a command under
// test reaches only hosts the test created.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/proc_stat.h"

extern char** environ;

namespace sv::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The processes whose parent is `pid`, from /proc.
inline std::vector<pid_t> childrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string stat = slurp(entry.path().string() + "/stat");
    if (procStatNumber<pid_t>(stat, kStatParentPid) == pid) out.push_back(std::stoi(name));
  }
  return out;
}

struct CommandResult {
  int status = -1;  // exit code, or 128 + signal
  bool timed_out = false;
  std::string out, err;
  std::string describe() const {
    return "status=" + std::to_string(status) + (timed_out ? " (TIMED OUT)" : "") +
           "\n--- stdout ---\n" + out + "--- stderr ---\n" + err;
  }
};

struct CommandOptions {
  std::string cwd = "/";
  std::string netns;             // a netns file (/run/netns/X) to join first
  std::vector<std::string> env;  // the whole environment; empty: inherit ours
  std::chrono::seconds timeout{60};
  int pass_fd = -1;  // handed to the program as fd 3, inherited (say, a socket)
};

// The environment a test gives `supervise`: ours without SUPERVISE_*
// settings (a developer's own must not steer a test), except the ones a
// CTest variant sets to run a whole suite differently (sv_add_gtest_variant:
// --backend, the test overrides), then `overrides` ("NAME=value"), each
// replacing whatever it names.
inline std::vector<std::string> superviseEnvironment(const std::vector<std::string>& overrides = {}) {
  static constexpr const char* kVariantKnobs[] = {"SUPERVISE_BACKEND=", "SUPERVISE_TEST_DISABLE=",
                                                  "SUPERVISE_TEST_READY_SESSIONS=",
                                                  "SUPERVISE_TEST_WRITE_RECHECK="};
  auto name = [](const std::string& e) { return e.substr(0, e.find('=') + 1); };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool keep = entry.rfind("SUPERVISE_", 0) != 0;
    for (const char* knob : kVariantKnobs) keep = keep || entry.rfind(knob, 0) == 0;
    for (const auto& o : overrides) keep = keep && name(o) != name(entry);
    if (keep) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

// Runs argv; output lands in out_base + ".out" / ".err". Kills it after
// options.timeout. `on_start` (optional) runs in the parent with its pid.
template <typename OnStart>
CommandResult runCommand(const std::vector<std::string>& argv, const std::string& out_base,
                         const CommandOptions& options, OnStart on_start) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : options.env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  char** envp = options.env.empty() ? environ : cenv.data();
  const std::string out_path = out_base + ".out", err_path = out_base + ".err";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!options.netns.empty()) {
      int fd = ::open(options.netns.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(121);
    }
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0 || ::chdir(options.cwd.c_str()) != 0) ::_exit(122);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (options.pass_fd >= 0) {
      if (options.pass_fd != 3) ::dup2(options.pass_fd, 3);  // dup2 clears CLOEXEC
      ::fcntl(3, F_SETFD, 0);
    }
    ::close_range(options.pass_fd >= 0 ? 4 : 3, ~0U, 0);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(cargv[0], cargv.data(), envp);
    ::_exit(127);
  }
  CommandResult r;
  if (pid < 0) return r;
  on_start(pid);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

inline CommandResult runCommand(const std::vector<std::string>& argv, const std::string& out_base,
                                const CommandOptions& options = {}) {
  return runCommand(argv, out_base, options, [](pid_t) {});
}

}  // namespace sv::test
