// ServeDaemon: `supervise serve` started by a test in its own directory
// (socket DIR/run/exec.sock unless given, audit DIR/audit.jsonl, log
// DIR/serve.log, cwd the workspace), waited for until it listens, SIGTERMed
// at the end.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/run_command.h"

namespace sv::test {

class ServeDaemon {
 public:
  ServeDaemon(std::string supervise, std::string dir, std::string workspace,
              std::string socket = "")
      : supervise_(std::move(supervise)),
        dir_(std::move(dir)),
        ws_(std::move(workspace)),
        socket_(socket.empty() ? dir_ + "/run/exec.sock" : std::move(socket)) {}
  ~ServeDaemon() { stop(); }
  ServeDaemon(const ServeDaemon&) = delete;
  ServeDaemon& operator=(const ServeDaemon&) = delete;

  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }
  std::string auditFile() const { return dir_ + "/audit.jsonl"; }
  std::string log() const { return slurp(dir_ + "/serve.log"); }

  // False, and *why, when it exited or did not listen within 30 s (a
  // sanitized build on a loaded host is slow to start).
  bool start(const std::vector<std::string>& extra, std::string* why) {
    std::vector<std::string> argv = {supervise_, "serve",        "--socket",
                                     socket(),   "--audit-file", auditFile()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    // The suite's variant without ready sessions (tests/e2e/CMakeLists.txt).
    if (const char* n = std::getenv("SUPERVISE_TEST_READY_SESSIONS"))
      argv.insert(argv.end(), {"--ready-sessions", n});
    std::filesystem::remove(dir_ + "/serve.log");
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      const int log = ::open((dir_ + "/serve.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int null = ::open("/dev/null", O_RDONLY);
      if (log < 0 || null < 0 || ::chdir(ws_.c_str()) != 0) ::_exit(122);
      ::dup2(null, 0);
      ::dup2(log, 1);
      ::dup2(log, 2);
      ::close_range(3, ~0U, 0);
      ::execv(supervise_.c_str(), cargv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 3000; ++i) {
      if (log().find("listening on") != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *why = "supervise serve exited: " + log();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    *why = "supervise serve did not start: " + log();
    return false;
  }

  bool alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }
  // stop() had to SIGKILL it: SIGTERM did not end it within 10 s.
  bool killed() const { return killed_; }

  // SIGTERM (SIGKILL after 10 s); its exit status, -1 when none ran.
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 1000 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      killed_ = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  std::string supervise_, dir_, ws_, socket_;
  pid_t pid_ = -1;
  bool killed_ = false;
};

}  // namespace sv::test
