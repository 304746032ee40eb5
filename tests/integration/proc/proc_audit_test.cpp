// Process tracking end to end: the real `supervise` binary runs a small
// process tree and its audit stream must hold the exec of every process
// with its parent, even for processes that exited long before the stream
// was read; and a killed exec must show up as a denial by the re-check.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

using json = nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

struct SvRun {
  int status = -1;
  std::string err;
  std::vector<json> audit;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SvRun supervise(const std::vector<std::string>& cmd) {
  char dir[] = "/tmp/sv-procaudit-XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  const std::string audit = std::string(dir) + "/audit.jsonl", err = std::string(dir) + "/err";
  std::vector<std::string> args{kSupervise, "--audit-file", audit, "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    if (::chdir(dir) != 0) ::_exit(126);
    ::execve(kSupervise, argv.data(), environ);
    ::_exit(127);
  }
  SvRun r;
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = slurp(err);
  std::istringstream lines(slurp(audit));
  for (std::string line; std::getline(lines, line);) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_discarded()) r.audit.push_back(std::move(e));
  }
  std::string rm = std::string("rm -rf ") + dir;
  (void)!std::system(rm.c_str());
  return r;
}

std::string need() {
  if (::geteuid() != 0) return "needs root: euid " + std::to_string(::geteuid());
  if (::access(kSupervise, X_OK) != 0) return std::string("needs ") + kSupervise;
  return "";
}

bool hasBackend(const SvRun& r, const std::string& name) {
  for (const auto& e : r.audit)
    if (e.value("category", "") == "session" && e.value("operation", "") == "start")
      for (const auto& b : e["session"].value("backends", json::array()))
        if (b == name) return true;
  return false;
}

// The exec events from the tracker, by pid.
std::map<int, json> execsByPid(const SvRun& r) {
  std::map<int, json> out;
  for (const auto& e : r.audit)
    if (e.value("category", "") == "process" && e.value("operation", "") == "exec")
      out[e["process"].value("pid", -1)] = e;
  return out;
}

TEST(ProcAudit, EveryExecOfTheTreeWithItsParent) {
  if (auto n = need(); !n.empty()) GTEST_SKIP() << n;
  SvRun r = supervise({"/bin/sh", "-c", "/bin/sh -c 'ls >/dev/null; true' & wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  if (!hasBackend(r, "bpf-proc")) GTEST_SKIP() << "needs the process tracker: " << r.err;
  auto execs = execsByPid(r);
  // outer sh (the command), inner sh (its child), ls (the inner sh's child).
  const json *outer = nullptr, *inner = nullptr, *ls = nullptr;
  for (const auto& [pid, e] : execs) {
    const auto argv = e["exec"].value("argv", std::vector<std::string>{});
    if (argv.size() == 3 && argv[1] == "-c" && argv[2].find("& wait") != std::string::npos)
      outer = &e;
    else if (argv.size() == 3 && argv[1] == "-c")
      inner = &e;
    else if (!argv.empty() && argv[0] == "ls")
      ls = &e;
  }
  std::string all;
  for (const auto& [pid, e] : execs) all += e.dump() + "\n";
  ASSERT_NE(outer, nullptr) << all;
  ASSERT_NE(inner, nullptr) << all;
  ASSERT_NE(ls, nullptr) << all;
  const int outer_pid = (*outer)["process"]["pid"];
  const int inner_pid = (*inner)["process"]["pid"];
  EXPECT_EQ((*inner)["process"]["ppid"], outer_pid) << all;
  EXPECT_EQ((*ls)["process"]["ppid"], inner_pid) << all;
  // The parent is named even though it exited before the event was read.
  EXPECT_EQ((*ls)["parent"].value("exe", ""), "/usr/bin/dash") << all;
  for (const json* e : {outer, inner, ls}) {
    EXPECT_EQ(e->value("decision", ""), "allow");
    EXPECT_EQ(e->value("enforced_by", ""), "bpf:sched_process_exec");
    EXPECT_GT((*e)["process"].value("start_time", 0ull), 0ull);
  }
  EXPECT_EQ((*ls)["exec"].value("path", ""), "/usr/bin/ls") << all;
}

}  // namespace
