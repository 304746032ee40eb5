// The open fast path of NotifyHandler must not allocate in steady state: a
// child under the code-sandbox filter opens a workspace file for writing
// again and again, and this process answers with a real NotifyHandler while
// counting every operator new made during handleOne().
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "policy/compile.h"
#include "policy/engine.h"
#include "tests/common/count_allocations.h"
#include "policy/load.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/notify/notify_handler.h"
#include "test_util.h"
#include "tracer/fd_passing.h"
#include "tracer/seccomp/notify.h"
#include "tracer/probe.h"
#include "tracer/seccomp/seccomp_filter.h"

using sv::testing::g_allocations;
using sv::testing::g_counting;

namespace sv::supervisor {
namespace {

using tracer::testing::TempDir;

constexpr int kOpens = 2000;
constexpr int kWarmUp = 100;  // first requests fill caches and size buffers

// Runs kOpens write opens of a child under the code-sandbox filter against a
// NotifyHandler here; `steady` gets the allocations made while handling the
// requests after the warm-up.
void countSteadyStateAllocations(bool audit_every_decision, long* steady);

#define SV_REQUIRE_NOTIFY()                                                               \
  do {                                                                                    \
    SV_REQUIRE_ROOT();                                                                    \
    const tracer::HostFeatures host = tracer::probeHost();                                \
    if (!host.seccomp_notify || !host.notify_addfd)                                       \
      GTEST_SKIP() << "needs seccomp user-notify with ADDFD: "                            \
                   << ::testing::PrintToString(host.notes);                               \
  } while (0)

TEST(NotifyHandlerAlloc, WriteOpenFastPathDoesNotAllocate) {
  SV_REQUIRE_NOTIFY();
  long steady = -1;
  countSteadyStateAllocations(false, &steady);
  EXPECT_EQ(steady, 0) << "allocations over the steady-state write opens";
}

// With every decision audited (the presets' default level) to a real sink:
// the event is reused and the encoder writes into the log's buffer.
TEST(NotifyHandlerAlloc, AuditedWriteOpenDoesNotAllocate) {
  SV_REQUIRE_NOTIFY();
  long steady = -1;
  countSteadyStateAllocations(true, &steady);
  EXPECT_EQ(steady, 0) << "allocations over the steady-state audited write opens";
}

void countSteadyStateAllocations(bool audit_every_decision, long* steady) {

  TempDir ws;
  ASSERT_FALSE(ws.path().empty());
  // A relative path from a deep cwd: the longest strings the fast path forms.
  const std::string dir = ws.path() + "/a/fairly/deep/directory/for/the/test";
  ASSERT_EQ(std::system(("mkdir -p " + dir + " && touch " + dir + "/file.txt").c_str()), 0);

  policy::LoadRequest request;
  request.workspace = ws.path();
  request.home = "/root";
  policy::LoadResult loaded = policy::load(request);
  ASSERT_TRUE(loaded.ok());
  const policy::CompiledPolicy compiled = policy::compile(*loaded.policy);
  auto filter = tracer::buildSeccompFilter(compiled.seccomp);
  ASSERT_TRUE(filter.ok()) << filter.error().message();
  const policy::Engine engine(loaded.policy);

  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(sv[0]);
    if (::chdir(dir.c_str()) != 0) _exit(10);
    const int listener = tracer::installSeccompFilter(*filter);
    if (listener < 0 || tracer::sendFdOverSocket(sv[1], listener) != 0) _exit(11);
    ::close(listener);
    for (int i = 0; i < kOpens; ++i) {
      const int fd = ::open("file.txt", O_WRONLY | O_CLOEXEC);
      if (fd < 0) _exit(12);
      ::close(fd);
    }
    _exit(0);
  }
  ::close(sv[1]);
  auto listener_fd = tracer::receiveFdOverSocket(sv[0]);
  ::close(sv[0]);
  ASSERT_TRUE(listener_fd.ok()) << listener_fd.error().message();
  auto listener = tracer::NotifyListener::create(std::move(*listener_fd));
  ASSERT_TRUE(listener.ok()) << listener.error().message();

  AuditLog audit(SessionInfo{});
  if (audit_every_decision) {
    ASSERT_TRUE(audit.addFileSink("/dev/null").ok());
  }
  NotifyOptions options;
  options.quiet = true;
  options.audit_allows = audit_every_decision;
  options.workspace = ws.path();
  options.root_pid = child;
  ListenerAnswer answer(*listener);
  NotifyHandler handler(engine, answer, audit, options);

  long steady_allocations = 0;
  for (;;) {
    pollfd p{listener->fd(), POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0 || !(p.revents & POLLIN)) break;  // HUP: the child is done
    const bool counting = handler.handled() >= kWarmUp;
    g_allocations = 0;
    g_counting = counting;
    handler.handleOne();
    g_counting = false;
    if (counting) steady_allocations += g_allocations.load();
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << tracer::testing::describeStatus(status);
  EXPECT_GE(handler.handled(), static_cast<uint64_t>(kOpens));
  *steady = steady_allocations;
}

}  // namespace
}  // namespace sv::supervisor
