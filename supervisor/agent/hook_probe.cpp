// The hook probe: see hook_probe.h.
#include "supervisor/agent/hook_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "supervisor/agent/claude_hook.h"

namespace sv::supervisor::agent {
namespace {

constexpr size_t kMaxCapture = 1u << 20;
constexpr std::chrono::seconds kHookTimeout{10};
// The daemon sample starts a session: allow for a cold BPF load.
constexpr std::chrono::seconds kDaemonTimeout{30};

struct Pipe {
  UniqueFd read, write;
};

Result<Pipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errnoError("pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

int statusOf(int wstatus) {
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

}  // namespace

Result<ShellRun> runShell(const std::string& command_line, std::string_view input,
                          const std::string& cwd, std::chrono::milliseconds timeout) {
  auto in = makePipe();
  if (!in) return in.error();
  auto out = makePipe();
  if (!out) return out.error();
  auto err = makePipe();
  if (!err) return err.error();
  const pid_t pid = ::fork();
  if (pid < 0) return errnoError("fork");
  if (pid == 0) {
    // Its own process group: a timeout kills whatever it started too.
    ::setpgid(0, 0);
    if (::dup2(in->read.get(), 0) < 0 || ::dup2(out->write.get(), 1) < 0 ||
        ::dup2(err->write.get(), 2) < 0 || ::chdir(cwd.c_str()) != 0)
      ::_exit(127);
    ::execl("/bin/sh", "sh", "-c", command_line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  in->read.reset();
  out->write.reset();
  err->write.reset();
  ::fcntl(in->write.get(), F_SETFL, O_NONBLOCK);
  // A child that exits without reading its stdin must not kill us with SIGPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);

  ShellRun run;
  size_t written = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out->read || err->read) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[3] = {
        {out->read.get(), POLLIN, 0}, {err->read.get(), POLLIN, 0}, {in->write.get(), POLLOUT, 0}};
    if (::poll(fds, 3, int(left.count())) < 0 && errno != EINTR) break;
    if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
      const ssize_t n = ::write(in->write.get(), input.data() + written, input.size() - written);
      if (n > 0) written += size_t(n);
      if (n < 0 || written == input.size()) in->write.reset();  // EOF for the hook
    }
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      UniqueFd& fd = i == 0 ? out->read : err->read;
      std::string& to = i == 0 ? run.out : run.err;
      char buf[4096];
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n > 0 && to.size() < kMaxCapture)
        to.append(buf, std::min(size_t(n), kMaxCapture - to.size()));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) fd.reset();
    }
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGPIPE, &old, nullptr);
  run.status = statusOf(wstatus);
  return run;
}

ProbeResult probeHooks(const std::vector<std::string>& hook_commands,
                       const std::string& project_dir, bool run_through_daemon) {
  ProbeResult result;
  const std::string payload = probePayload(kProbeCommand, project_dir);
  std::string rewritten;
  for (const std::string& command : hook_commands) {
    auto run = runShell(command, payload, project_dir, kHookTimeout);
    std::string why, cmd;
    if (!run) {
      why = run.error().message();
    } else if (run->timed_out) {
      why = "the hook did not answer within " + std::to_string(kHookTimeout.count()) + " s";
    } else if (!checkProbeReply(run->status, run->out, &cmd, &why)) {
      if (!run->err.empty()) why += " (its stderr: " + run->err.substr(0, 400) + ")";
    }
    if (!why.empty()) {
      result.problems.push_back(command + ": " + why);
      continue;
    }
    rewritten = cmd;
  }
  result.rewritten = !hook_commands.empty() && result.problems.empty();
  if (!result.rewritten || !run_through_daemon) return result;

  // The rewritten sample, as Claude Code's Bash tool would run it.
  auto run = runShell(rewritten, "", project_dir, kDaemonTimeout);
  if (!run) {
    result.daemon_problem = run.error().message();
  } else if (run->timed_out) {
    result.daemon_problem =
        "it did not end within " + std::to_string(kDaemonTimeout.count()) + " s";
  } else if (run->status != 0 || run->out != kProbeExpectedOutput) {
    result.daemon_problem = "exit status " + std::to_string(run->status) +
                            (run->err.empty() ? "" : ": " + run->err.substr(0, 400));
    while (!result.daemon_problem.empty() && result.daemon_problem.back() == '\n')
      result.daemon_problem.pop_back();
  } else {
    result.daemon_ran = true;
  }
  return result;
}

}  // namespace sv::supervisor::agent
