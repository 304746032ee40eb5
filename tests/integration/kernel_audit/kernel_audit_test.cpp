// Kernel denials through kernel audit, counted, on the real kernel (root).
//
// Turns audit on through AuditSwitch (a test-private state dir), runs a
// Landlock-restricted child (LOG_NEW_EXEC_ON, then execve of /bin/sh) that makes N
// distinct denied reads while an unrelated restricted process makes denied reads
// too, and expects exactly N denials for the session and none of the other's. Audit
// must be back as found at the end. Skips, with the probe result, where NETLINK_AUDIT
// or Landlock audit (ABI 7) is missing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/kernel_abi.h"
#include "tracer/kernel_audit/audit_abi.h"
#include "tracer/kernel_audit/audit_netlink.h"
#include "tracer/kernel_audit/audit_records.h"
#include "tracer/kernel_audit/audit_switch.h"

namespace sv::tracer::kernel_audit {
namespace {

namespace ta = sv::tracer::abi;

std::string missingFeature() {
  if (::geteuid() != 0) return "needs root: euid " + std::to_string(::geteuid());
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, ta::kLandlockCreateRulesetVersion);
  if (abi < abi::kLandlockAbiWithAudit)
    return "needs Landlock ABI >= 7 (audit): got " + std::to_string(abi);
  auto control = AuditControl::open();
  if (!control.ok()) return "needs NETLINK_AUDIT: " + control.error().message();
  auto status = control->getStatus();
  if (!status.ok()) return "needs AUDIT_GET: " + status.error().message();
  auto listener = AuditListener::open(1 << 20);
  if (!listener.ok()) return "needs the audit multicast group: " + listener.error().message();
  return "";
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sv-kaudit-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The switch's tests of turning audit on start from it off: why not here, or "".
std::string whyNotFromOff() {
  if (auto missing = missingFeature(); !missing.empty()) return missing;
  auto control = AuditControl::open();
  auto status = control ? control->getStatus() : Result<AuditStatus>(control.error());
  if (status.ok() && status->enabled != 0)
    return "needs kernel audit off to test turning it on: enabled=" +
           std::to_string(status->enabled);
  return "";
}

// Such a test's host as found, and a switch state directory of its own.
struct FromOff {
  Result<AuditControl> control = AuditControl::open();
  Result<AuditStatus> initial =  // not ok() when either failed
      control ? control->getStatus() : Result<AuditStatus>(control.error());
  TempDir dir;
  AuditSwitchOptions options{dir.path() + "/state"};
};

void addRule(int ruleset, const char* path, uint64_t access) {
  ta::LandlockPathBeneathAttr pb{};
  pb.allowed_access = access;
  pb.parent_fd = ::open(path, O_PATH | O_CLOEXEC);
  if (pb.parent_fd < 0) return;  // e.g. no /lib64: nothing to allow there
  if (::syscall(SYS_landlock_add_rule, ruleset, ta::kLandlockRulePathBeneath, &pb, 0) != 0)
    ::_exit(120);
  ::close(pb.parent_fd);
}

// In a forked child: a domain that may read and run the system (/usr, /lib*, /bin,
// /etc) and nothing else, logged after execve as supervise's launcher would ask.
void restrictChild(uint32_t flags) {
  ta::LandlockRulesetAttr attr{};
  attr.handled_access_fs = (ta::kFsIoctlDev << 1) - 1;
  attr.scoped = ta::kScopeAbstractUnixSocket | ta::kScopeSignal;
  const int ruleset = ::syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
  if (ruleset < 0) ::_exit(121);
  const uint64_t rx = ta::kFsExecute | ta::kFsReadFile | ta::kFsReadDir;
  for (const char* p : {"/usr", "/lib", "/lib64", "/bin", "/etc"}) addRule(ruleset, p, rx);
  addRule(ruleset, "/dev/null", ta::kFsReadFile | ta::kFsWriteFile);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(122);
  if (::syscall(SYS_landlock_restrict_self, ruleset, flags) != 0) ::_exit(123);
  ::close(ruleset);
}

// Forks a restricted /bin/sh that opens each of `files` once (a redirection on the
// regular builtin `true`, which unlike `:` does not make sh exit when it fails:
// one openat per file, no other file access outside the allowed roots).
pid_t spawnDeniedReads(const std::vector<std::string>& files) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  restrictChild(abi::kLandlockRestrictSelfLogNewExecOn);
  std::vector<const char*> argv = {"sh", "-c",
                                   "for f in \"$@\"; do true < \"$f\"; done 2>/dev/null", "sh"};
  for (const auto& f : files) argv.push_back(f.c_str());
  argv.push_back(nullptr);
  ::execv("/bin/sh", const_cast<char* const*>(argv.data()));
  ::_exit(124);
}

std::vector<std::string> makeFiles(const std::string& dir, const std::string& prefix, int n) {
  std::vector<std::string> files;
  for (int i = 0; i < n; ++i) {
    files.push_back(dir + "/" + prefix + std::to_string(i));
    const int fd = ::open(files.back().c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    ::close(fd);
  }
  return files;
}

TEST(KernelAudit, CountsEveryLandlockDenialOfTheSessionOnly) {
  if (auto missing = missingFeature(); !missing.empty()) GTEST_SKIP() << missing;
  constexpr int kN = 50;
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto control = AuditControl::open();
  ASSERT_TRUE(control.ok());
  auto initial = control->getStatus();
  ASSERT_TRUE(initial.ok()) << initial.error().message();

  AuditSwitchOptions options;
  options.state_dir = dir.path() + "/state";
  {
    auto audit_switch = AuditSwitch::acquire(options);
    ASSERT_TRUE(audit_switch.ok()) << audit_switch.error().message();
    std::printf("audit switch: %s\n", audit_switch->report().describe().c_str());
    if (initial->enabled == 0) {
      EXPECT_EQ(audit_switch->report().action, AuditSwitchAction::kEnabled);
    } else {
      EXPECT_NE(audit_switch->report().action, AuditSwitchAction::kEnabled);
    }
    auto on = control->getStatus();
    ASSERT_TRUE(on.ok());
    EXPECT_NE(on->enabled, 0U);
    EXPECT_EQ(on->pid, initial->pid) << "the auditd registration is never touched";

    auto listener = AuditListener::open();
    ASSERT_TRUE(listener.ok()) << listener.error().message();

    const auto mine = makeFiles(dir.path(), "mine", kN);
    const auto theirs = makeFiles(dir.path(), "theirs", 20);
    const pid_t other = spawnDeniedReads(theirs);  // not the session's: another domain
    const pid_t session = spawnDeniedReads(mine);
    ASSERT_GT(other, 0);
    ASSERT_GT(session, 0);

    RecordAssembler assembler;
    RecordAssembler::Output out;
    SessionFilter filter(session);
    std::vector<KernelDenial> accepted;
    size_t other_seen = 0;
    std::set<uint64_t> deallocated;
    std::map<uint64_t, uint64_t> dealloc_count;
    auto pump = [&] {
      auto n = listener->drain(
          [&](uint16_t type, std::string_view text) { assembler.feed(type, text, out); });
      ASSERT_TRUE(n.ok()) << n.error().message();
      for (const auto& d : out.domains) filter.observe(d);
      for (auto& d : out.denials) {
        if (d.kind != DenialKind::kLandlockFs) continue;
        if (d.pid == other) ++other_seen;
        // The process table of this "session" is the one pid it started.
        if (filter.accept(d, [&](int64_t pid) { return pid == session; }))
          accepted.push_back(std::move(d));
      }
      for (const auto& d : out.domains)
        if (!d.allocated && d.denials) dealloc_count[d.domain] = *d.denials;
      out.denials.clear();
      out.domains.clear();
    };

    int status = 0;
    ASSERT_EQ(::waitpid(session, &status, 0), session);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    ASSERT_EQ(::waitpid(other, &status, 0), other);
    // Records arrive within milliseconds; the deallocated record when the domain's last
    // reference goes (after the task is reaped, from a work queue). Wait for both.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{listener->fd(), POLLIN, 0};
      ::poll(&p, 1, 100);
      pump();
      if (accepted.size() >= kN && !filter.domains().empty() &&
          dealloc_count.count(filter.domains().front()))
        break;
    }
    assembler.flushAll(out);
    pump();

    EXPECT_EQ(listener->overruns(), 0U);
    ASSERT_EQ(accepted.size(), static_cast<size_t>(kN));
    std::set<std::string> paths;
    for (const auto& d : accepted) {
      EXPECT_EQ(d.pid, session);
      EXPECT_EQ(d.blockers, std::vector<std::string>{"fs.read_file"});
      EXPECT_EQ(d.syscall_nr, 257);  // openat
      ASSERT_TRUE(d.syscall_record);
      EXPECT_EQ(d.syscall_record->exit, -EACCES);
      ASSERT_TRUE(d.path);
      paths.insert(*d.path);
    }
    EXPECT_EQ(paths, std::set<std::string>(mine.begin(), mine.end()));
    EXPECT_EQ(other_seen, theirs.size()) << "the other process's denials were there too";
    ASSERT_EQ(filter.domains().size(), 1U);
    // The kernel's own count for the domain agrees: nothing was lost on the way.
    if (dealloc_count.count(filter.domains().front())) {
      EXPECT_EQ(dealloc_count[filter.domains().front()], static_cast<uint64_t>(kN));
    } else {
      std::printf("note: no deallocated record within 5 s\n");
    }

    auto restored = audit_switch->release();
    ASSERT_TRUE(restored.ok()) << restored.error().message();
    if (initial->enabled == 0) {
      EXPECT_EQ(*restored, AuditRestoreAction::kRestored);
    }
  }
  auto after = control->getStatus();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->enabled, initial->enabled);
  EXPECT_EQ(after->pid, initial->pid);
  EXPECT_EQ(after->backlog_limit, initial->backlog_limit);
}

TEST(KernelAudit, SwitchCountsConcurrentSessionsAndSurvivesAKilledOne) {
  if (auto why = whyNotFromOff(); !why.empty()) GTEST_SKIP() << why;
  FromOff host;
  ASSERT_TRUE(host.initial.ok());
  auto& [control, initial, dir, options] = host;

  auto first = AuditSwitch::acquire(options);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->report().action, AuditSwitchAction::kEnabled);
  auto second = AuditSwitch::acquire(options);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->report().action, AuditSwitchAction::kJoined);
  auto r = first->release();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, AuditRestoreAction::kNotOurs) << "another session still holds it";
  EXPECT_EQ(control->getStatus()->enabled, 1U);
  r = second->release();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, AuditRestoreAction::kRestored);
  EXPECT_EQ(control->getStatus()->enabled, 0U);
  EXPECT_EQ(control->getStatus()->backlog_limit, initial->backlog_limit);

  // A session SIGKILLed while holding the switch: audit stays on (nobody is left to
  // restore it) until the next acquire or recoverStale() finds no holder.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t victim = ::fork();
  if (victim == 0) {
    auto held = AuditSwitch::acquire(options);
    char c = held.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  ::kill(victim, SIGKILL);
  ::waitpid(victim, nullptr, 0);
  EXPECT_EQ(control->getStatus()->enabled, 1U) << "left on by the killed session";
  auto recovered = AuditSwitch::recoverStale(options);
  ASSERT_TRUE(recovered.ok()) << recovered.error().message();
  ASSERT_TRUE(recovered->has_value());
  EXPECT_EQ(**recovered, AuditRestoreAction::kRestored);
  auto after = control->getStatus();
  EXPECT_EQ(after->enabled, 0U);
  EXPECT_EQ(after->backlog_limit, initial->backlog_limit);
  EXPECT_EQ(after->pid, initial->pid);
  ::close(ready[0]);
  ::close(ready[1]);
}

// A session's end hands the switch the status it read last (the kernel
// spends a thread on each AUDIT_GET reply): release() decides on it rather
// than asking again. One saying an auditd registered meanwhile leaves audit on.
TEST(KernelAudit, ReleaseDecidesOnTheStatusItIsHanded) {
  if (auto why = whyNotFromOff(); !why.empty()) GTEST_SKIP() << why;
  FromOff host;
  ASSERT_TRUE(host.initial.ok());
  auto& [control, initial, dir, options] = host;

  auto held = AuditSwitch::acquire(options);
  ASSERT_TRUE(held.ok()) << held.error().message();
  auto now = control->getStatus();
  ASSERT_TRUE(now.ok());
  AuditStatus with_auditd = *now;
  with_auditd.pid = 4242;  // no such auditd: only the handed status says so
  auto r = held->release(with_auditd);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, AuditRestoreAction::kLeftForAuditd);
  EXPECT_EQ(control->getStatus()->enabled, 1U) << "left on, as for an auditd";
  EXPECT_NE(::access((options.state_dir + "/state").c_str(), F_OK), 0)
      << "no longer supervise's to restore";
  // Put the host back as it was.
  ASSERT_TRUE(control->setBacklogLimit(initial->backlog_limit).ok());
  ASSERT_TRUE(control->setEnabled(0).ok());

  // The status as it is: restored as always.
  held = AuditSwitch::acquire(options);
  ASSERT_TRUE(held.ok()) << held.error().message();
  now = control->getStatus();
  ASSERT_TRUE(now.ok());
  r = held->release(*now);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, AuditRestoreAction::kRestored);
  EXPECT_EQ(control->getStatus()->enabled, 0U);
  EXPECT_EQ(control->getStatus()->backlog_limit, initial->backlog_limit);
}

}  // namespace
}  // namespace sv::tracer::kernel_audit
