// `supervise check [--policy F]`: a functional self-test that proves
// enforcement on this host the way an operator would by hand.
//
// doctor says what the kernel offers; check runs the real thing. Every check
// is a supervised run of this very binary (/proc/self/exe, so the check tests
// the build the operator is holding) in a throwaway git repository:
//
//   git status works, a shell command works, a persistent node REPL session
//   evaluates `const n = 40` then `n + 2`, a write to .env is denied and the
//   file stays unchanged, a loopback TCP connect reaches a listener of the
//   check, and a connect to a non-loopback test host is blocked.
//
// The test host lives in a network namespace the check creates itself: two
// anonymous namespaces held open by child processes (PR_SET_PDEATHSIG), a
// veth pair between them created inside them, 198.51.100.0/24, no default
// route. Nothing is named in /run/netns and nothing lives in the host's own
// namespace, so whatever way the check ends the kernel frees it all and no
// packet can leave the machine.
//
// One line per check: ok, FAIL (with what happened) or skip (a prerequisite
// such as node, bash or ip is missing: not a failure). Exit 0 when nothing
// failed, 1 otherwise, 2 for usage errors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "supervisor/cli/commands.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;

constexpr int kRunTimeoutMs = 5000;
constexpr int kReplTimeoutMs = 8000;
constexpr char kTestHost[] = "198.51.100.1";
constexpr char kTestSide[] = "198.51.100.2";

int64_t nowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The absolute path of `name` on $PATH, "" when absent.
std::string findProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string p = dir + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string lastLine(const std::string& s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// ---- a child process with pipes ----

struct Step {
  std::string send;    // written to the child's stdin
  std::string expect;  // then wait until stdout contains this ("" = don't wait)
};

struct RunResult {
  int status = -1;  // exit code, 128+signal, or -1 on timeout / spawn failure
  bool timed_out = false;
  std::string out, err;
  std::string describe() const {
    std::string s = timed_out ? "timed out" : "exit " + std::to_string(status);
    if (auto l = lastLine(err); !l.empty()) s += ", stderr: " + l;
    return s;
  }
};

// Runs argv in cwd (and in the network namespace netns_fd, when >= 0),
// feeding `steps` to stdin in order, each after the previous one's expected
// output appeared; stdin is closed after the last step. Kills the child at
// the deadline (supervise takes its tree with it: session cgroup).
RunResult runProcess(const std::vector<std::string>& argv, const std::string& cwd, int netns_fd,
                     const std::vector<Step>& steps, int timeout_ms) {
  RunResult r;
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) {
    r.err = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "setns: %s\n", std::strerror(errno));
      ::_exit(126);
    }
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::close_range(3, ~0U, 0);  // only what a shell would pass on
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  UniqueFd to_child(in[1]), from_out(out[0]), from_err(err[0]);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    r.err = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill the check
  const int64_t deadline = nowMs() + timeout_ms;
  size_t step = 0;
  bool sent = false;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    if (to_child && !sent && step < steps.size()) {
      const std::string& s = steps[step].send;
      if (!s.empty() && ::write(to_child.get(), s.data(), s.size()) < 0) to_child.reset();
      sent = true;
    }
    if (sent && (steps[step].expect.empty() || r.out.find(steps[step].expect) != std::string::npos)) {
      ++step;
      sent = false;
    }
    if (step >= steps.size()) to_child.reset();  // EOF: the child may finish
    int64_t left = deadline - nowMs();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{out_open ? from_out.get() : -1, POLLIN, 0},
                   {err_open ? from_err.get() : -1, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(std::min<int64_t>(left, 100))) < 0 && errno != EINTR) break;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!r.timed_out) r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return r;
}

// ---- network namespaces that vanish with the check ----

// A child process that unshares a network namespace and waits; the namespace
// lives exactly as long as it (and any socket made in it) does.
class NetnsHolder {
 public:
  NetnsHolder() = default;
  NetnsHolder(const NetnsHolder&) = delete;
  NetnsHolder& operator=(const NetnsHolder&) = delete;
  ~NetnsHolder() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // "" or what went wrong.
  std::string start() {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      // Dies with the check, even on SIGKILL: the namespace goes with it.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(0);
      char ok = ::unshare(CLONE_NEWNET) == 0 ? 0 : static_cast<char>(errno);
      (void)!::write(ready[1], &ok, 1);
      ::close(ready[1]);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    if (pid_ < 0) {
      ::close(ready[0]);
      return std::string("fork: ") + std::strerror(errno);
    }
    char res = 1;
    ssize_t n = ::read(ready[0], &res, 1);
    ::close(ready[0]);
    if (n != 1 || res != 0)
      return std::string("unshare(CLONE_NEWNET): ") + std::strerror(n == 1 ? res : EIO);
    fd_ = UniqueFd(::open(("/proc/" + std::to_string(pid_) + "/ns/net").c_str(),
                          O_RDONLY | O_CLOEXEC));
    if (!fd_) return std::string("open ns/net: ") + std::strerror(errno);
    return "";
  }
  pid_t pid() const { return pid_; }
  int fd() const { return fd_.get(); }

 private:
  pid_t pid_ = -1;
  UniqueFd fd_;
};

// Switches the calling thread into a namespace and back (sockets keep the
// namespace they were made in).
class InNetns {
 public:
  explicit InNetns(int target) : home_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) {
    ok_ = home_ && ::setns(target, CLONE_NEWNET) == 0;
  }
  ~InNetns() {
    // Failing to return would leave the check itself in the test namespace.
    if (ok_ && ::setns(home_.get(), CLONE_NEWNET) != 0) std::abort();
  }
  bool ok() const { return ok_; }

 private:
  UniqueFd home_;
  bool ok_ = false;
};

// ---- TCP helpers ----

// A listening socket on ip:ephemeral; the peer's bytes are read after the run.
struct Listener {
  UniqueFd fd;
  uint16_t port = 0;

  std::string listen(const char* ip) {
    fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, ip, &a.sin_addr);
    socklen_t len = sizeof a;
    if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd.get(), 8) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return std::string("listen on ") + ip + ": " + std::strerror(errno);
    port = ntohs(a.sin_port);
    return "";
  }

  // Everything the connections queued so far sent (waits up to wait_ms for a
  // first connection; the peer has exited, so its data is complete).
  std::string drain(int wait_ms) {
    std::string data;
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) return data;
    for (;;) {
      UniqueFd c(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) break;
      char buf[256];
      pollfd q{c.get(), POLLIN, 0};
      while (::poll(&q, 1, 500) > 0) {
        ssize_t n = ::read(c.get(), buf, sizeof buf);
        if (n <= 0) break;
        data.append(buf, static_cast<size_t>(n));
      }
    }
    return data;
  }
};

// A plain connect + send from the current namespace, to prove the test host
// is reachable without supervision. "" or the error.
std::string plainConnect(const char* ip, uint16_t port, const std::string& data) {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  timeval tv{2, 0};
  ::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (!s || ::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return std::string("connect: ") + std::strerror(errno);
  if (::write(s.get(), data.data(), data.size()) < 0) return std::string("write: ") + std::strerror(errno);
  return "";
}

// ---- the checks ----

enum class Outcome { Ok, Fail, Skip };

struct CheckOutcome {
  Outcome outcome = Outcome::Ok;
  std::string detail;
};

CheckOutcome ok(std::string detail = "") { return {Outcome::Ok, std::move(detail)}; }
CheckOutcome failed(std::string detail) { return {Outcome::Fail, std::move(detail)}; }
CheckOutcome skipped(std::string reason) { return {Outcome::Skip, std::move(reason)}; }

class Checker {
 public:
  Checker(std::string self, std::string policy, fs::path repo)
      : self_(std::move(self)), policy_(std::move(policy)), repo_(std::move(repo)) {}

  // `supervise [--policy F] --audit-file A -- argv...` in the repo.
  RunResult supervised(const std::vector<std::string>& argv, const std::vector<Step>& steps = {},
                       int netns_fd = -1, int timeout_ms = kRunTimeoutMs) {
    audit_ = repo_.parent_path() / ("audit-" + std::to_string(++runs_) + ".jsonl");
    std::vector<std::string> full = {self_};
    if (!policy_.empty()) full.insert(full.end(), {"--policy", policy_});
    full.insert(full.end(), {"--audit-file", audit_.string(), "--"});
    full.insert(full.end(), argv.begin(), argv.end());
    return runProcess(full, repo_.string(), netns_fd, steps, timeout_ms);
  }

  // The first decision event of the last run that `match` accepts.
  nlohmann::json auditEvent(const std::function<bool(const nlohmann::json&)>& match) const {
    std::ifstream in(audit_);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("decision") && match(j)) return j;
    }
    return nullptr;
  }

  // " (EACCES, rule deny-write-env)" from an event.
  static std::string ruleNote(const nlohmann::json& e) {
    if (!e.is_object()) return "";
    std::string err = e.value("errno", nlohmann::json()).is_string() ? e["errno"].get<std::string>() : "";
    std::string rule = e.contains("rule") ? e["rule"].value("id", "") : "";
    return err + (rule.empty() ? "" : (err.empty() ? "" : ", ") + ("rule " + rule));
  }

  CheckOutcome gitStatus() {
    std::string git = findProgram("git");
    if (git.empty()) return skipped("git not found on PATH");
    // git init writes .git/config and .git/hooks, which code-sandbox denies
    // by design: the repository is made unsupervised, as an agent's would be.
    auto init = runProcess({git, "init", "-q", repo_.string()}, "/", -1, {}, kRunTimeoutMs);
    if (init.status != 0) return skipped("git init failed unsupervised: " + init.describe());
    std::ofstream(repo_ / "hello.txt") << "hello\n";
    auto r = supervised({git, "status", "--porcelain"});
    if (r.status != 0) return failed(r.describe());
    if (r.out.find("?? hello.txt") == std::string::npos)
      return failed("unexpected output: " + lastLine(r.out));
    return ok();
  }

  CheckOutcome shellCommand() {
    std::string sh = findProgram("sh");
    if (sh.empty()) return skipped("sh not found on PATH");
    auto r = supervised({sh, "-c", "echo supervised > shell.txt && cat shell.txt"});
    if (r.status != 0) return failed(r.describe());
    std::ifstream in(repo_ / "shell.txt");
    std::string content((std::istreambuf_iterator<char>(in)), {});
    if (r.out != "supervised\n" || content != "supervised\n")
      return failed("output \"" + lastLine(r.out) + "\", file \"" + lastLine(content) + "\"");
    return ok();
  }

  CheckOutcome nodeRepl() {
    std::string node = findProgram("node");
    if (node.empty()) return skipped("node not found on PATH");
    // One REPL process, two inputs: the second only works if the session
    // kept the first one's state.
    auto r = supervised({node, "-i"},
                        {{"const n = 40\n", "undefined"}, {"n + 2\n", "42"}, {".exit\n", ""}},
                        -1, kReplTimeoutMs);
    if (r.out.find("42") == std::string::npos)
      return failed("no 42 from the REPL (" + r.describe() + ", stdout: " + lastLine(r.out) + ")");
    if (r.status != 0) return failed(r.describe());
    return ok("const n = 40; n + 2 -> 42");
  }

  CheckOutcome envWriteDenied() {
    std::string sh = findProgram("sh");
    if (sh.empty()) return skipped("sh not found on PATH");
    const std::string secret = "SECRET=do-not-touch\n";
    std::ofstream(repo_ / ".env") << secret;
    auto r = supervised({sh, "-c", "echo leaked > .env"});
    std::ifstream in(repo_ / ".env");
    std::string content((std::istreambuf_iterator<char>(in)), {});
    if (content != secret) return failed(".env was changed to \"" + lastLine(content) + "\"");
    if (r.status == 0) return failed("the write succeeded (exit 0)");
    bool errno_seen = r.err.find("Permission denied") != std::string::npos ||
                      r.err.find("Operation not permitted") != std::string::npos;
    if (!errno_seen) return failed("not an EACCES/EPERM failure: " + r.describe());
    auto e = auditEvent([&](const nlohmann::json& j) {
      return j.value("decision", "") == "deny" && j.contains("file") &&
             j["file"].value("path", "").ends_with("/.env");
    });
    return ok(ruleNote(e));
  }

  CheckOutcome loopbackConnect() {
    std::string bash = findProgram("bash");
    if (bash.empty()) return skipped("bash not found on PATH (its /dev/tcp makes the connect)");
    Listener l;
    if (auto e = l.listen("127.0.0.1"); !e.empty()) return failed(e);
    auto r = supervised(
        {bash, "-c", "echo loopback > /dev/tcp/127.0.0.1/" + std::to_string(l.port)});
    std::string got = l.drain(1000);
    if (r.status != 0) return failed(r.describe());
    if (got != "loopback\n") return failed("the listener received \"" + lastLine(got) + "\"");
    return ok("127.0.0.1:" + std::to_string(l.port));
  }

  CheckOutcome nonLoopbackBlocked() {
    std::string bash = findProgram("bash");
    if (bash.empty()) return skipped("bash not found on PATH (its /dev/tcp makes the connect)");
    std::string ip = findProgram("ip");
    if (ip.empty()) return skipped("ip (iproute2) not found on PATH");
    if (::geteuid() != 0) return skipped("needs root to create the test host's network namespace");
    NetnsHolder side, host;
    if (auto e = side.start(); !e.empty()) return skipped("network namespace: " + e);
    if (auto e = host.start(); !e.empty()) return skipped("network namespace: " + e);
    // Created inside the namespaces, so nothing is left in the host's.
    const std::string hostpid = std::to_string(host.pid());
    const std::vector<std::pair<int, std::vector<std::string>>> steps = {
        {side.fd(), {ip, "link", "add", "sv-check", "type", "veth", "peer", "name", "sv-host",
                     "netns", hostpid}},
        {side.fd(), {ip, "addr", "add", std::string(kTestSide) + "/24", "dev", "sv-check"}},
        {side.fd(), {ip, "link", "set", "sv-check", "up"}},
        {side.fd(), {ip, "link", "set", "lo", "up"}},
        {host.fd(), {ip, "addr", "add", std::string(kTestHost) + "/24", "dev", "sv-host"}},
        {host.fd(), {ip, "link", "set", "sv-host", "up"}},
        {host.fd(), {ip, "link", "set", "lo", "up"}},
    };
    for (const auto& [ns, argv] : steps) {
      auto r = runProcess(argv, "/", ns, {}, kRunTimeoutMs);
      if (r.status != 0) return failed("test host setup `ip " + argv[1] + " " + argv[2] + "`: " + r.describe());
    }
    Listener l;
    {
      InNetns in(host.fd());
      if (!in.ok()) return failed(std::string("setns: ") + std::strerror(errno));
      if (auto e = l.listen(kTestHost); !e.empty()) return failed(e);
    }
    // Control: unsupervised, the test host is reachable, so a failure below
    // is the policy's and not the network's.
    {
      InNetns in(side.fd());
      if (!in.ok()) return failed(std::string("setns: ") + std::strerror(errno));
      if (auto e = plainConnect(kTestHost, l.port, "control\n"); !e.empty())
        return failed("the test host is unreachable even unsupervised: " + e);
    }
    if (l.drain(1000) != "control\n") return failed("the test host did not get the control message");
    const std::string dest = std::string(kTestHost) + ":" + std::to_string(l.port);
    auto r = supervised({bash, "-c", "echo escaped > /dev/tcp/" + std::string(kTestHost) + "/" +
                                         std::to_string(l.port)},
                        {}, side.fd());
    std::string got = l.drain(200);
    if (got.find("escaped") != std::string::npos) return failed("the connection to " + dest + " got through");
    if (r.status == 0) return failed("the connect to " + dest + " succeeded (exit 0)");
    auto e = auditEvent([&](const nlohmann::json& j) {
      return j.value("decision", "") == "deny" && j.value("category", "") == "network" &&
             j.contains("network") && j["network"].value("ip", "") == kTestHost;
    });
    if (!e.is_object()) return failed("no network deny event for " + dest + ": " + r.describe());
    return ok(dest + ", " + ruleNote(e));
  }

 private:
  std::string self_;
  std::string policy_;
  fs::path repo_;
  fs::path audit_;
  int runs_ = 0;
};

// Removes the scratch directory however the check returns.
struct ScratchDir {
  fs::path path;
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

int runCheck(const std::string& policy_file) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    std::fprintf(stderr, "supervise check: readlink /proc/self/exe: %s\n", std::strerror(errno));
    return kUsageExitCode;
  }
  self[n] = '\0';
  std::string policy;
  if (!policy_file.empty()) {
    std::error_code ec;
    policy = fs::absolute(policy_file, ec).string();  // the runs start in the scratch repo
    if (ec || ::access(policy.c_str(), R_OK) != 0) {
      std::fprintf(stderr, "supervise check: cannot read policy %s\n", policy_file.c_str());
      return kUsageExitCode;
    }
  }
  std::string tmpl = (fs::temp_directory_path() / "supervise-check-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "supervise check: mkdtemp: %s\n", std::strerror(errno));
    return kUsageExitCode;
  }
  ScratchDir scratch{tmpl};
  fs::path repo = scratch.path / "repo";
  fs::create_directory(repo);
  // NODE_REPL_HISTORY: the REPL would otherwise keep a history file in $HOME,
  // outside what the default policy lets a command write.
  ::setenv("NODE_REPL_HISTORY", "", 1);

  Checker c(self, policy, repo);
  const std::vector<std::pair<std::string, std::function<CheckOutcome()>>> checks = {
      {"git status in a throwaway repo", [&] { return c.gitStatus(); }},
      {"shell command", [&] { return c.shellCommand(); }},
      {"node REPL session", [&] { return c.nodeRepl(); }},
      {"write to .env denied", [&] { return c.envWriteDenied(); }},
      {"loopback TCP connect", [&] { return c.loopbackConnect(); }},
      {"non-loopback connect blocked", [&] { return c.nonLoopbackBlocked(); }},
  };
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  int n_ok = 0, n_fail = 0, n_skip = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    const auto& [name, run] = checks[i];
    if (tty) {
      std::printf("[%zu/%zu] %s ...", i + 1, checks.size(), name.c_str());
      std::fflush(stdout);
    }
    CheckOutcome o = run();
    if (tty) std::printf("\r\033[K");
    switch (o.outcome) {
      case Outcome::Ok:
        ++n_ok;
        std::printf("ok    %s%s\n", name.c_str(), o.detail.empty() ? "" : (" (" + o.detail + ")").c_str());
        break;
      case Outcome::Fail:
        ++n_fail;
        std::printf("FAIL  %s: %s\n", name.c_str(), o.detail.c_str());
        break;
      case Outcome::Skip:
        ++n_skip;
        std::printf("skip  %s: %s\n", name.c_str(), o.detail.c_str());
        break;
    }
    std::fflush(stdout);
  }
  std::printf("check: %d ok, %d failed, %d skipped\n", n_ok, n_fail, n_skip);
  return n_fail == 0 ? 0 : 1;
}

}  // namespace

void registerCheck(CLI::App& app, CommandContext& ctx) {
  auto policy = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "prove enforcement on this host: supervised git, shell, node REPL, a denied .env write, "
      "loopback allowed, a non-loopback test host blocked (exit 1 if any check fails)");
  sub->add_option("-p,--policy", *policy, "check with this policy file instead of the discovered one");
  sub->footer(
      "Examples:\n"
      "  sudo supervise check\n"
      "  sudo supervise check --policy .supervise.json");
  sub->callback([&ctx, policy] {
    ctx.exit_code = runGuarded("check", 1, [&] { return runCheck(*policy); });
  });
}

}  // namespace sv::supervisor
