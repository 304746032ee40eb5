// ProcTracker against the real kernel: a forked child joins a scratch cgroup
// the tracker is scoped to, then forks/execs as each case says. Checked: the
// fork/exec/exit events (pids, parent, argv, the binary's identity), and the
// exec re-check's verdicts by the child's exit status: an approved binary
// runs, anything else dies of SIGKILL before printing a byte.
#include "tracer/bpf/proc_tracker.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tracer/cgroup.h"  // ScratchCgroup, ownCgroupPath

extern char** environ;

namespace sv::tracer {
namespace {

ExecFileId idOf(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
  EXPECT_TRUE(fd) << path;
  auto id = execFileIdOf(fd.get());
  EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message());
  return id.ok() ? *id : ExecFileId{};
}

// A child in the cgroup, stopped until go(): the test approves its exec in
// between, as the supervisor does between the notification and CONTINUE.
class Child {
 public:
  Child(const ScratchCgroup& cg, std::function<void()> body) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[1]);
      ::close(ready[0]);
      if (!cg.addProcess(::getpid()).ok()) ::_exit(120);
      char c = 1;
      (void)!::write(ready[1], &c, 1);
      if (::read(p[0], &c, 1) != 1) ::_exit(121);
      body();
      ::_exit(122);
    }
    ::close(p[0]);
    ::close(ready[1]);
    go_ = p[1];
    char c;
    (void)!::read(ready[0], &c, 1);  // in the cgroup now
    ::close(ready[0]);
  }
  ~Child() {
    if (go_ >= 0) ::close(go_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void go() {
    char c = 1;
    (void)!::write(go_, &c, 1);
  }
  // Raw wait status.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
  bool reaped_ = false;
};

void execOrDie(const char* path, const char* arg) {
  char* const argv[] = {const_cast<char*>(path), const_cast<char*>(arg), nullptr};
  ::execve(path, argv, environ);
  ::_exit(123);
}

bool killedBySigkill(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

class ProcTrackerTest : public testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: euid " << ::geteuid();
    auto parent = ownCgroupPath();
    if (!parent) GTEST_SKIP() << "needs cgroup v2: " << parent.error().message();
    auto cg = ScratchCgroup::create(*parent, "sv-proctest");
    if (!cg) GTEST_SKIP() << "needs a writable cgroup v2: " << cg.error().message();
    cg_.emplace(std::move(*cg));
  }

  // The tracker, or nullptr (with skip_) when the kernel refuses the programs.
  ProcTracker* load(bool recheck, bool audit_only = false) {
    auto loaded = ProcTracker::load(cg_->fd(), {.recheck = recheck, .audit_only = audit_only});
    if (!loaded) {
      skip_ = "needs BPF raw tracepoints + ring buffer: " + loaded.error().message();
      return nullptr;
    }
    tracker_.emplace(std::move(*loaded));
    return &*tracker_;
  }

  std::vector<ProcEvent> drain() {
    std::vector<ProcEvent> out;
    tracker_->consume([&](const ProcEvent& e) { out.push_back(e); });
    return out;
  }

  // The (last) exec event of process `tgid` among the pending events.
  std::optional<ProcEvent> execOf(pid_t tgid) {
    std::optional<ProcEvent> found;
    for (auto& e : drain())
      if (e.type == ProcEventType::Exec && e.tgid == tgid) found = std::move(e);
    return found;
  }

  std::optional<ScratchCgroup> cg_;
  std::optional<ProcTracker> tracker_;
  std::string skip_;
};

#define LOAD_OR_SKIP(var, ...)                     \
  ProcTracker* var = load(__VA_ARGS__);            \
  if (var == nullptr) GTEST_SKIP() << skip_

TEST(KernelLayout, FoundInRunningKernelQuickly) {
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    GTEST_SKIP() << "needs /sys/kernel/btf/vmlinux: " << std::strerror(errno);
  const auto start = std::chrono::steady_clock::now();
  auto layout = findKernelLayout();
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                            start).count();
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_GT(layout->task_tgid, layout->task_pid - 1);
  EXPECT_NE(layout->bprm_file, layout->bprm_filename);
  EXPECT_GT(layout->mm_arg_end, layout->mm_arg_start);
  RecordProperty("scan_ms", std::to_string(ms));
  std::printf("kernel layout scan: %.2f ms\n", ms);
}

TEST(KernelLayout, RejectsGarbage) {
  char path[] = "/tmp/sv-btf-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  (void)!::write(fd, "not btf at all, not btf at all", 30);
  ::close(fd);
  auto layout = findKernelLayout(path);
  ::unlink(path);
  EXPECT_FALSE(layout.ok());
}

TEST(ExecFileIdTest, SameFileSameIdAcrossNames) {
  char dir[] = "/tmp/sv-fileid-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string a = std::string(dir) + "/a", b = std::string(dir) + "/b";
  std::ofstream(a) << "x";
  ASSERT_EQ(::link(a.c_str(), b.c_str()), 0);
  struct stat st;
  ASSERT_EQ(::stat(a.c_str(), &st), 0);
  EXPECT_EQ(idOf(a), idOf(b));
  EXPECT_EQ(idOf(a).ino, st.st_ino);
  EXPECT_NE(idOf(a), idOf("/bin/true"));
  ::unlink(a.c_str());
  ::unlink(b.c_str());
  ::rmdir(dir);
}

// A mount id freed by an unmount is given to the next mount. An identity
// cached for the old mount must not name a file of the new one (the exec
// re-check would kill its exec): the table is read again once it changed.
// Two tmpfs hold two devices; a bind of the first is identified, unmounted,
// and its id goes to a bind of the second.
TEST(ExecFileIdTest, AReusedMountIdNamesTheNewMount) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
  char base[] = "/tmp/sv-mntid-XXXXXX";
  ASSERT_NE(::mkdtemp(base), nullptr);
  const std::string one = std::string(base) + "/one", two = std::string(base) + "/two",
                    bind = std::string(base) + "/bind";
  for (const auto& d : {one, two, bind}) ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
  auto cleanup = [&] {
    for (const auto& d : {bind, bind, one, two}) ::umount2(d.c_str(), MNT_DETACH);
    for (const auto& d : {one, two, bind}) {
      ::unlink((d + "/f").c_str());
      ::rmdir(d.c_str());
    }
    ::rmdir(base);
  };
  if (::mount("tmpfs", one.c_str(), "tmpfs", 0, "size=64k") != 0 ||
      ::mount("tmpfs", two.c_str(), "tmpfs", 0, "size=64k") != 0) {
    const int err = errno;
    cleanup();
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(err);
  }
  std::ofstream(one + "/f") << "1";
  std::ofstream(two + "/f") << "2";
  // Binds `from` at `bind`: its mount id, and the file's identity through it.
  auto bindAndIdentify = [&](const std::string& from, uint64_t* mnt_id) -> ExecFileId {
    EXPECT_EQ(::mount(from.c_str(), bind.c_str(), nullptr, MS_BIND, nullptr), 0)
        << std::strerror(errno);
    UniqueFd fd(::open((bind + "/f").c_str(), O_PATH | O_CLOEXEC));
    struct statx stx {};
    EXPECT_EQ(::statx(fd.get(), "", AT_EMPTY_PATH, STATX_MNT_ID, &stx), 0);
    *mnt_id = stx.stx_mnt_id;
    auto id = execFileIdOf(fd.get());
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : ExecFileId{};
  };
  auto devOf = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return static_cast<uint32_t>((major(st.st_dev) << 20) | minor(st.st_dev));  // tmpfs: s_dev
  };
  const uint32_t dev_one = devOf(one), dev_two = devOf(two);
  ASSERT_NE(dev_one, dev_two);
  bool reused = false;
  for (int i = 0; i < 20 && !reused; ++i) {
    uint64_t first = 0, second = 0;
    EXPECT_EQ(bindAndIdentify(one, &first).dev, dev_one);
    ASSERT_EQ(::umount2(bind.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    EXPECT_EQ(bindAndIdentify(two, &second).dev, dev_two)
        << "mount " << second << " named by the device of the bind it replaced";
    ASSERT_EQ(::umount2(bind.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    reused = first == second;
  }
  cleanup();
  if (!reused) GTEST_SKIP() << "the mount id was never given again (a busy host)";
}

TEST_F(ProcTrackerTest, ForkExecExitEventsNameTheParent) {
  LOAD_OR_SKIP(t, false);
  (void)t;
  Child child(*cg_, [] {
    pid_t inner = ::fork();
    if (inner == 0) execOrDie("/bin/true", "inner-arg");
    ::waitpid(inner, nullptr, 0);
    ::_exit(0);
  });
  child.go();
  ASSERT_EQ(child.wait(), 0);
  std::vector<ProcEvent> events = drain();
  const ProcEvent *fork = nullptr, *exec = nullptr, *exit_inner = nullptr, *exit_child = nullptr;
  for (const auto& e : events) {
    if (e.type == ProcEventType::Fork && e.ppid == child.pid()) fork = &e;
    if (e.type == ProcEventType::Exec && e.filename == "/bin/true") exec = &e;
    if (e.type == ProcEventType::Exit && e.tgid == child.pid()) exit_child = &e;
  }
  ASSERT_NE(fork, nullptr) << events.size() << " events";
  ASSERT_NE(exec, nullptr);
  for (const auto& e : events)
    if (e.type == ProcEventType::Exit && e.tgid == fork->tgid) exit_inner = &e;
  ASSERT_NE(exit_inner, nullptr);
  ASSERT_NE(exit_child, nullptr);
  EXPECT_EQ(exec->tgid, fork->tgid);
  EXPECT_EQ(exec->ppid, child.pid());
  EXPECT_EQ(exec->old_pid, fork->tgid);
  EXPECT_EQ(exec->argv, (std::vector<std::string>{"/bin/true", "inner-arg"}));
  EXPECT_EQ(exec->file, idOf("/bin/true"));
  EXPECT_EQ(exec->verdict, ExecVerdict::None);
  EXPECT_FALSE(exec->killed);
  EXPECT_EQ(exec->start_time_ticks, fork->start_time_ticks);
  EXPECT_GT(fork->start_time_ticks, 0u);
}

TEST_F(ProcTrackerTest, OutsideTheCgroupIsIgnored) {
  LOAD_OR_SKIP(t, true);
  pid_t pid = ::fork();
  if (pid == 0) execOrDie("/bin/true", "outside");  // not in the cgroup, not approved
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(status, 0) << "the re-check must not touch processes outside the session";
  for (const auto& e : drain()) EXPECT_NE(e.tgid, pid);
  EXPECT_EQ(t->kills(), 0u);
}

TEST_F(ProcTrackerTest, ApprovedBinaryRuns) {
  LOAD_OR_SKIP(t, true);
  Child child(*cg_, [] { execOrDie("/bin/true", "x"); });
  const ExecFileId id = idOf("/bin/true");
  ASSERT_TRUE(t->approveExec(child.pid(), {&id, 1}).ok());
  child.go();
  EXPECT_EQ(child.wait(), 0);
  auto exec = execOf(child.pid());
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->verdict, ExecVerdict::Approved);
  EXPECT_FALSE(exec->killed);
}

TEST_F(ProcTrackerTest, UnapprovedExecIsKilled) {
  LOAD_OR_SKIP(t, true);
  Child child(*cg_, [] { execOrDie("/bin/true", "x"); });
  child.go();
  EXPECT_TRUE(killedBySigkill(child.wait()));
  auto exec = execOf(child.pid());
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->verdict, ExecVerdict::Unapproved);
  EXPECT_TRUE(exec->killed);
  EXPECT_EQ(t->kills(), 1u);
}

TEST_F(ProcTrackerTest, SwappedBinaryIsKilledBeforeItPrints) {
  LOAD_OR_SKIP(t, true);
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  Child child(*cg_, [&] {
    ::dup2(out[1], 1);
    execOrDie("/bin/echo", "RAN");  // approved was /bin/true
  });
  ::close(out[1]);
  const ExecFileId id = idOf("/bin/true");
  ASSERT_TRUE(t->approveExec(child.pid(), {&id, 1}).ok());
  child.go();
  EXPECT_TRUE(killedBySigkill(child.wait()));
  char buf[16];
  EXPECT_EQ(::read(out[0], buf, sizeof buf), 0) << "the swapped-in binary printed";
  ::close(out[0]);
  auto exec = execOf(child.pid());
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->verdict, ExecVerdict::Mismatch);
}

TEST_F(ProcTrackerTest, AuditOnlyReportsWithoutKilling) {
  LOAD_OR_SKIP(t, true, /*audit_only=*/true);
  (void)t;
  Child child(*cg_, [] { execOrDie("/bin/true", "x"); });
  child.go();
  EXPECT_EQ(child.wait(), 0);
  auto exec = execOf(child.pid());
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->verdict, ExecVerdict::Unapproved);
  EXPECT_TRUE(exec->audit_only);
  EXPECT_FALSE(exec->killed);
}

// A #! script: bprm->file is the interpreter by the time the exec
// tracepoint fires, so the approval must name it.
TEST_F(ProcTrackerTest, ScriptNeedsItsInterpreterApproved) {
  char dir[] = "/tmp/sv-procscript-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/s.sh";
  std::ofstream(script) << "#!/bin/sh\nexit 7\n";
  ::chmod(script.c_str(), 0755);
  LOAD_OR_SKIP(t, true);
  for (bool with_interpreter : {true, false}) {
    Child child(*cg_, [&] { execOrDie(script.c_str(), "x"); });
    std::vector<ExecFileId> ids = {idOf(script)};
    if (with_interpreter) ids.push_back(idOf("/bin/sh"));
    ASSERT_TRUE(t->approveExec(child.pid(), ids).ok());
    child.go();
    const int status = child.wait();
    if (with_interpreter)
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status;
    else
      EXPECT_TRUE(killedBySigkill(status)) << status;
  }
  ::unlink(script.c_str());
  ::rmdir(dir);
}

// exec from a non-leader thread: the tracepoint sees the leader's pid, the
// approval is keyed by the thread that called execve (old_pid).
TEST_F(ProcTrackerTest, NonLeaderThreadExecUsesCallingThreadsApproval) {
  LOAD_OR_SKIP(t, true);
  int tid_pipe[2], go_pipe[2];
  ASSERT_EQ(::pipe(tid_pipe), 0);
  ASSERT_EQ(::pipe(go_pipe), 0);
  Child child(*cg_, [&] {
    std::thread([&] {
      pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
      (void)!::write(tid_pipe[1], &tid, sizeof tid);
      char c;
      (void)!::read(go_pipe[0], &c, 1);
      execOrDie("/bin/true", "from-thread");
    }).join();
  });
  child.go();
  pid_t tid = 0;
  ASSERT_EQ(::read(tid_pipe[0], &tid, sizeof tid), static_cast<ssize_t>(sizeof tid));
  ASSERT_NE(tid, child.pid());
  const ExecFileId id = idOf("/bin/true");
  ASSERT_TRUE(t->approveExec(tid, {&id, 1}).ok());
  (void)!::write(go_pipe[1], "g", 1);
  EXPECT_EQ(child.wait(), 0);
  auto exec = execOf(child.pid());
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->old_pid, tid);
  EXPECT_EQ(exec->verdict, ExecVerdict::Approved);
  for (int fd : {tid_pipe[0], tid_pipe[1], go_pipe[0], go_pipe[1]}) ::close(fd);
}

// fexecve of a memfd: the approval names the memfd's inode (its mount is in
// no mountinfo; execFileIdOf falls back to its stat device).
TEST_F(ProcTrackerTest, MemfdExecveatEmptyPath) {
  LOAD_OR_SKIP(t, true);
  int mem = static_cast<int>(::syscall(SYS_memfd_create, "sv-true", 0));
  ASSERT_GE(mem, 0);
  {
    std::ifstream in("/bin/true", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_EQ(::write(mem, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  auto id = execFileIdOf(mem);
  ASSERT_TRUE(id.ok()) << id.error().message();
  Child child(*cg_, [&] {
    char* const argv[] = {const_cast<char*>("memfd"), nullptr};
    ::syscall(SYS_execveat, mem, "", argv, environ, AT_EMPTY_PATH);
    ::_exit(124);
  });
  ASSERT_TRUE(t->approveExec(child.pid(), {&*id, 1}).ok());
  child.go();
  EXPECT_EQ(child.wait(), 0);
  ::close(mem);
}

// One load serves every session: a second tracker opens the first one's
// programs, and each session sees only its own tree and applies only its
// own re-check.
TEST_F(ProcTrackerTest, SessionsShareOneLoadAndKeepToTheirOwnTree) {
  LOAD_OR_SKIP(t, true);
  auto parent = ownCgroupPath();
  ASSERT_TRUE(parent.ok());
  auto other_cg = ScratchCgroup::create(*parent, "sv-proctest-other");
  ASSERT_TRUE(other_cg.ok()) << other_cg.error().message();
  auto other = ProcTracker::load(other_cg->fd(), {.recheck = false});
  ASSERT_TRUE(other.ok()) << other.error().message();
  EXPECT_EQ(other->execProgramId(), t->execProgramId());
  EXPECT_NE(other->slot(), t->slot());

  // Unapproved, but the other session has no re-check: it runs.
  Child child(*other_cg, [] { execOrDie("/bin/true", "other-session"); });
  child.go();
  EXPECT_EQ(child.wait(), 0);
  EXPECT_FALSE(execOf(child.pid()).has_value()) << "an event of another session's tree";
  bool seen = false;
  other->consume([&](const ProcEvent& e) {
    seen = seen || (e.type == ProcEventType::Exec && e.tgid == child.pid() &&
                    e.verdict == ExecVerdict::None);
  });
  EXPECT_TRUE(seen) << "the other session missed its own exec";
  EXPECT_EQ(t->kills(), 0u);
}

// A supervisor killed with SIGKILL cannot release its slot; the next session
// takes it over (the claim names a process that is gone).
TEST_F(ProcTrackerTest, SlotOfAKilledSupervisorIsTakenOver) {
  LOAD_OR_SKIP(t, false);
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  const pid_t owner = ::fork();
  if (owner == 0) {
    auto claimed = ProcTracker::load(cg_->fd(), {});
    const uint32_t slot = claimed ? claimed->slot() : ~0u;
    (void)!::write(p[1], &slot, sizeof slot);
    ::pause();
    ::_exit(0);
  }
  ::close(p[1]);
  uint32_t dead_slot = ~0u;
  ASSERT_EQ(::read(p[0], &dead_slot, sizeof dead_slot), ssize_t(sizeof dead_slot));
  ::close(p[0]);
  ASSERT_NE(dead_slot, ~0u) << "the owner could not load";
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);

  ASSERT_EQ(t->slotOwner(dead_slot), static_cast<uint32_t>(owner)) << "the claim stays";
  // Each load takes the lowest free or stale slot, so loading until the dead
  // claim is gone reaches it (other tests running at once may take it first:
  // that is a takeover too).
  std::vector<ProcTracker> held;
  for (int i = 0; i < 64 && t->slotOwner(dead_slot) == static_cast<uint32_t>(owner); ++i) {
    auto more = ProcTracker::load(cg_->fd(), {});
    ASSERT_TRUE(more.ok()) << more.error().message();
    held.push_back(std::move(*more));
  }
  EXPECT_NE(t->slotOwner(dead_slot), static_cast<uint32_t>(owner))
      << "the dead supervisor's slot " << dead_slot << " was never taken over";
}

}  // namespace
}  // namespace sv::tracer
