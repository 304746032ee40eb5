// launch(): the command runs only once started, from copies of its argv and
// environment; its parent thread lives as long as the Launched handle (the
// kernel's parent-death signal follows that thread); a handle dropped before
// the start leaves the command unrun; a set-up failure before the exec is
// reported with the child's exit code.
#include "supervisor/session/launcher.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace sv::supervisor {
namespace {

using tracer::testing::TempDir;

// Waits for the child behind pidfd; returns its siginfo (si_code, si_status).
siginfo_t waitPidfd(int pidfd) {
  siginfo_t info{};
  pollfd p{pidfd, POLLIN, 0};
  if (::poll(&p, 1, 10000) != 1) return info;  // si_code 0: did not end
  ::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED);
  return info;
}

LaunchSpec shellSpec(const std::string& script) {
  LaunchSpec spec;
  spec.exe = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.drop_capabilities = false;  // runs as any user
  sigemptyset(&spec.child_sigmask);
  return spec;
}

// launch() + awaitSetUp() + startCommand(), as a session does.
Result<Launched> launchAndStart(const LaunchSpec& spec) {
  auto launched = launch(spec);
  if (!launched) return launched.error();
  if (auto st = awaitSetUp(*launched); !st) return st.error();
  if (auto st = startCommand(*launched); !st) return st.error();
  return launched;
}

// A filter that allows everything but still hands back a listener.
const std::vector<sock_filter> kAllowAll = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
// The same, except that execve waits for the listener's answer.
const std::vector<sock_filter> kNotifyExecve = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};

TEST(Launcher, CommandRunsFromCopiesOfArgvAndEnvironment) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  Result<Launched> launched = Error{0, "not launched"};
  {
    LaunchSpec spec = shellSpec("printf '%s %s' \"$0\" \"$SV_LAUNCH_TEST\" > " + out);
    spec.argv.push_back("argument-zero-" + std::string(40, '0'));
    spec.env = {"SV_LAUNCH_TEST=from-the-environment-" + std::string(40, 'e')};
    spec.seccomp_filter = &kNotifyExecve;
    launched = launchAndStart(spec);
    ASSERT_TRUE(launched) << launched.error().message();
    ASSERT_TRUE(launched->listener);
    // The child shares this memory and waits in execve: free and overwrite
    // the spec's strings before letting it go on.
    for (auto& a : spec.argv) std::fill(a.begin(), a.end(), 'x');
    for (auto& e : spec.env) std::fill(e.begin(), e.end(), 'x');
  }
  std::vector<std::string> noise(64, std::string(48, 'z'));
  seccomp_notif request{};
  ASSERT_EQ(::ioctl(launched->listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &request), 0);
  EXPECT_EQ(request.data.nr, __NR_execve);
  seccomp_notif_resp response{};
  response.id = request.id;
  response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ASSERT_EQ(::ioctl(launched->listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &response), 0);
  const siginfo_t info = waitPidfd(launched->pidfd.get());
  ASSERT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "argument-zero-" + std::string(40, '0') + " from-the-environment-" +
                            std::string(40, 'e'));
}

TEST(Launcher, CommandOutlivesLaunchAndExitsWithItsOwnStatus) {
  auto launched = launchAndStart(shellSpec("sleep 0.3; exit 7"));
  ASSERT_TRUE(launched) << launched.error().message();
  EXPECT_GT(launched->pid, 0);
  const siginfo_t info = waitPidfd(launched->pidfd.get());
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 7);
  EXPECT_EQ(info.si_pid, launched->pid);
  commandExited(*launched);  // the parent thread ends early; the handle still joins it
}

TEST(Launcher, DestroyingTheHandleKillsARunningCommand) {
  auto launched = launchAndStart(shellSpec("exec sleep 30"));
  ASSERT_TRUE(launched) << launched.error().message();
  UniqueFd pidfd = std::move(launched->pidfd);
  launched = Error{0, "destroyed"};  // ends the parent thread: PR_SET_PDEATHSIG
  const siginfo_t info = waitPidfd(pidfd.get());
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGKILL);
}

TEST(Launcher, SetupFailureBeforeExecIsReportedWithTheExitCode) {
  UniqueFd not_a_ruleset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  LaunchSpec spec = shellSpec("exit 0");
  spec.landlock_ruleset_fd = not_a_ruleset.get();
  spec.seccomp_filter = &kAllowAll;
  auto launched = launchAndStart(spec);
  ASSERT_FALSE(launched);
  EXPECT_NE(launched.error().message().find("setup failed"), std::string::npos)
      << launched.error().message();
  EXPECT_NE(launched.error().message().find("exit 125"), std::string::npos)
      << launched.error().message();
}

TEST(Launcher, MissingExecutableExits127AfterLaunch) {
  LaunchSpec spec = shellSpec("");
  spec.exe = "/nonexistent/sv-launch-test";
  auto launched = launchAndStart(spec);
  ASSERT_TRUE(launched) << launched.error().message();
  const siginfo_t info = waitPidfd(launched->pidfd.get());
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 127);
}

TEST(Launcher, CommandRunsOnlyOnceStarted) {
  TempDir dir;
  const std::string mark = dir.path() + "/ran";
  auto launched = launch(shellSpec("touch " + mark));
  ASSERT_TRUE(launched) << launched.error().message();
  ASSERT_TRUE(awaitSetUp(*launched));
  ::usleep(200 * 1000);
  EXPECT_NE(::access(mark.c_str(), F_OK), 0) << "ran before startCommand()";
  ASSERT_TRUE(startCommand(*launched));
  const siginfo_t info = waitPidfd(launched->pidfd.get());
  EXPECT_EQ(info.si_code, CLD_EXITED);
  EXPECT_EQ(info.si_status, 0);
  EXPECT_EQ(::access(mark.c_str(), F_OK), 0);
}

// A session that gives up between launch and start (a missing mechanism,
// say): the child leaves without running anything, whether it had finished
// its set-up or not.
TEST(Launcher, DroppedBeforeTheStartTheCommandNeverRuns) {
  TempDir dir;
  for (bool set_up : {false, true}) {
    const std::string mark = dir.path() + (set_up ? "/after-set-up" : "/during-set-up");
    LaunchSpec spec = shellSpec("touch " + mark);
    spec.seccomp_filter = &kAllowAll;
    pid_t pid = -1;
    {
      auto launched = launch(spec);
      ASSERT_TRUE(launched) << launched.error().message();
      if (set_up) {
        ASSERT_TRUE(awaitSetUp(*launched));
        pid = launched->pid;
      }
    }  // dropped: the child is gone and reaped
    if (pid > 0) {
      EXPECT_NE(::kill(pid, 0), 0) << "child " << pid << " still exists";
    }
    ::usleep(100 * 1000);
    EXPECT_NE(::access(mark.c_str(), F_OK), 0) << mark;
  }
}

}  // namespace
}  // namespace sv::supervisor
