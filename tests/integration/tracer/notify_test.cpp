// User-notify end to end: a filtered child, the listener passed to the parent
// over a socketpair, the parent answering (errno, ADDFD, CONTINUE).
#include "tracer/seccomp/notify.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cstring>
#include <fstream>

#include "test_util.h"
#include "tracer/fd_passing.h"
#include "tracer/probe.h"
#include "tracer/seccomp/seccomp_filter.h"
#include "tracer/seccomp/target_memory.h"

namespace sv::tracer {
namespace {

using testing::describeStatus;
using testing::TempDir;

// A filtered child plus our listener for it.
struct Supervised {
  pid_t pid = -1;
  std::optional<NotifyListener> listener;

  int wait() {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return status;
  }
  ~Supervised() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      wait();
    }
  }
};

// Skips unless root and the kernel really supports user-notify with ADDFD.
#define SV_REQUIRE_NOTIFY()                                  \
  do {                                                       \
    SV_REQUIRE_ROOT();                                       \
    static const HostFeatures kHost = probeHost();           \
    if (!kHost.seccomp_notify || !kHost.notify_addfd) {      \
      GTEST_SKIP() << "needs seccomp-notify with ADDFD: "    \
                   << ::testing::PrintToString(kHost.notes); \
    }                                                        \
  } while (0)

template <typename Fn>
void startSupervised(Supervised& s, const policy::SeccompPlan& plan, Fn&& fn) {
  auto prog = buildSeccompFilter(plan);
  ASSERT_TRUE(prog.ok()) << prog.error().message();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd ours(sv[0]), theirs(sv[1]);
  s.pid = fork();
  ASSERT_GE(s.pid, 0);
  if (s.pid == 0) {
    int listener = installSeccompFilter(*prog);
    if (listener < 0) _exit(100);
    if (sendFdOverSocket(theirs.get(), listener) != 0) _exit(101);
    close(listener);
    _exit(fn());
  }
  theirs.reset();
  auto fd = receiveFdOverSocket(ours.get());
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  auto l = NotifyListener::create(std::move(*fd));
  ASSERT_TRUE(l.ok()) << l.error().message();
  s.listener.emplace(std::move(*l));
}

// Waits (bounded) for a notification and receives it.
seccomp_notif* nextNotification(NotifyListener& l, int timeout_ms = 5000) {
  pollfd p{l.fd(), POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1 || !(p.revents & POLLIN)) return nullptr;
  seccomp_notif* req = nullptr;
  auto got = l.receive(req);
  if (!got.ok() || !*got) return nullptr;
  return req;
}

TEST(NotifyTest, WriteOpenIsNotifiedAndAnsweredWithErrno) {
  SV_REQUIRE_NOTIFY();
  TempDir tmp;
  std::string target = tmp.path() + "/blocked.txt";
  Supervised s;
  startSupervised(s, {}, [&] {
    // A read-only open first: if it were notified, nobody would answer it and
    // the parent would see it as the first notification.
    int ro = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
    if (ro < 0) return 1;
    close(ro);
    int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EXDEV) return 2;
    return 0;
  });
  ASSERT_TRUE(s.listener);
  EXPECT_TRUE(s.listener->enableSyncWakeUp().ok());
  seccomp_notif* req = nextNotification(*s.listener);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->data.nr, __NR_openat);
  EXPECT_EQ(static_cast<pid_t>(req->pid), s.pid);
  EXPECT_TRUE(req->data.args[2] & O_WRONLY);
  char path[4096];
  auto len = readTargetString(req->pid, req->data.args[1], path, sizeof(path));
  ASSERT_TRUE(len.ok()) << len.error().message();
  EXPECT_EQ(std::string(path, *len), target);
  EXPECT_TRUE(s.listener->idValid(req->id));
  ASSERT_TRUE(s.listener->respondErrno(req->id, EXDEV).ok());
  int status = s.wait();
  EXPECT_CHILD_EXIT0(status);
  EXPECT_NE(access(target.c_str(), F_OK), 0);  // the open never ran
}

TEST(NotifyTest, AddFdInjectsParentOpenedFile) {
  SV_REQUIRE_NOTIFY();
  TempDir tmp;
  std::string real = tmp.path() + "/real.txt";
  std::ofstream(real) << "injected";
  Supervised s;
  startSupervised(s, {}, [] {
    int fd = open("/nonexistent/dir/file", O_RDWR | O_CLOEXEC);
    if (fd < 0) return 1;
    char buf[16] = {};
    if (read(fd, buf, sizeof(buf)) != 8) return 2;
    return std::memcmp(buf, "injected", 8) == 0 ? 0 : 3;
  });
  ASSERT_TRUE(s.listener);
  seccomp_notif* req = nextNotification(*s.listener);
  ASSERT_NE(req, nullptr);
  UniqueFd file(open(real.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(file);
  auto newfd = s.listener->addFd(req->id, file.get(), /*cloexec=*/true, /*send_atomically=*/true);
  ASSERT_TRUE(newfd.ok()) << newfd.error().message();
  EXPECT_GE(*newfd, 0);
  int status = s.wait();
  EXPECT_CHILD_EXIT0(status);
}

TEST(NotifyTest, ExecIsNotifiedAndContinued) {
  SV_REQUIRE_NOTIFY();
  Supervised s;
  startSupervised(s, {}, [] {
    char* argv[] = {const_cast<char*>("true"), nullptr};
    execv("/bin/true", argv);
    return 1;
  });
  ASSERT_TRUE(s.listener);
  seccomp_notif* req = nextNotification(*s.listener);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->data.nr, __NR_execve);
  ASSERT_TRUE(s.listener->respondContinue(req->id).ok());
  int status = s.wait();
  EXPECT_CHILD_EXIT0(status);
}

TEST(NotifyTest, ClosingTheListenerFailsPendingSyscallsWithEnosys) {
  // Fail closed: if the supervisor goes away, a pending and every later
  // notified syscall fails instead of running undecided.
  SV_REQUIRE_NOTIFY();
  Supervised s;
  startSupervised(s, {}, [] {
    int fd = open("/tmp/sv-notify-never", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != ENOSYS) return 1;
    if (mkdir("/tmp/sv-notify-never-dir", 0755) == 0 || errno != ENOSYS) return 2;
    return 0;
  });
  ASSERT_TRUE(s.listener);
  seccomp_notif* req = nextNotification(*s.listener);
  ASSERT_NE(req, nullptr);
  s.listener.reset();  // closes the listener fd with the notification pending
  int status = s.wait();
  EXPECT_CHILD_EXIT0(status);
}

TEST(NotifyTest, IdInvalidAfterTargetDiedAndRespondIsHarmless) {
  SV_REQUIRE_NOTIFY();
  Supervised s;
  startSupervised(s, {}, [] {
    open("/tmp/sv-notify-never", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    return 0;
  });
  ASSERT_TRUE(s.listener);
  seccomp_notif* req = nextNotification(*s.listener);
  ASSERT_NE(req, nullptr);
  uint64_t id = req->id;
  EXPECT_TRUE(s.listener->idValid(id));
  kill(s.pid, SIGKILL);
  int status = s.wait();
  EXPECT_TRUE(WIFSIGNALED(status)) << describeStatus(status);
  EXPECT_FALSE(s.listener->idValid(id));
  // ENOENT from SEND (target gone) is folded into success.
  EXPECT_TRUE(s.listener->respondErrno(id, EPERM).ok());
  auto addfd = s.listener->addFd(id, 0, true, true);
  ASSERT_FALSE(addfd.ok());
  EXPECT_EQ(addfd.error().code, ENOENT);
}

}  // namespace
}  // namespace sv::tracer
