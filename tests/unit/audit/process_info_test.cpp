// readProcessInfo() and ProcessCache against real processes.
#include "supervisor/proc/process_info.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <cstdlib>
#include <thread>

#include "common/proc_stat.h"

namespace sv::supervisor {
namespace {

// A /proc/PID/stat line: `comm`, then fields 3.. (state S, ppid 77, 5..21
// as their own numbers, starttime 999, then the rest).
std::string statLine(const std::string& comm) {
  std::string line = "123 (" + comm + ") S 77";
  for (int field = 5; field <= 21; ++field) line += " " + std::to_string(field);
  return line + " 999 0 0\n";
}

TEST(ProcStatTest, FieldsCountFromTheLastParenthesisOfAHostileComm) {
  for (const std::string comm : {"sh", "a b", "x) S 5 6", ") 1 2 3 (", "(()"}) {
    const std::string line = statLine(comm);
    EXPECT_EQ(procStatComm(line), comm) << line;
    EXPECT_EQ(procStatNumber<int>(line, kStatParentPid), 77) << line;
    EXPECT_EQ(procStatNumber<uint64_t>(line, kStatStartTime), 999u) << line;
    EXPECT_EQ(procStatNumber<int>(line, 5), 5) << line;
  }
}

TEST(ProcStatTest, AMalformedOrShortLineHasNoField) {
  const std::string line = statLine("sh");
  EXPECT_EQ(procStatNumber<int>(line, 3), std::nullopt);  // "S": not a number
  EXPECT_EQ(procStatNumber<int>(line, 2), std::nullopt);  // comm's own: not counted
  EXPECT_EQ(procStatNumber<int>(line, 60), std::nullopt);
  EXPECT_EQ(procStatNumber<uint64_t>(line.substr(0, line.find(" 999")), kStatStartTime),
            std::nullopt);
  EXPECT_EQ(procStatNumber<int>("123 sh S 77", kStatParentPid), std::nullopt);  // no ')'
  EXPECT_EQ(procStatComm("123 sh) S"), std::nullopt);
  EXPECT_EQ(procStatNumber<int>("1 (a) S 7x 8", kStatParentPid), std::nullopt);
}

TEST(ProcStatTest, ReadsThisProcess) {
  const std::string line = [] {
    std::ifstream in("/proc/self/stat");
    std::string text;
    std::getline(in, text);
    return text;
  }();
  EXPECT_EQ(procStatNumber<pid_t>(line, kStatParentPid), ::getppid());
  EXPECT_EQ(procStatNumber<uint64_t>(line, kStatStartTime), readProcessInfo(::getpid(), 0).start_time);
}

std::string readLinkOrEmpty(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, size_t(n));
}

std::string realPath(const char* p) {
  char buf[PATH_MAX];
  return realpath(p, buf) ? buf : "";
}

// A child running `sleep 30` in /tmp; killed and reaped on destruction.
class SleepChild {
 public:
  SleepChild() {
    pid_ = fork();
    if (pid_ == 0) {
      if (chdir("/tmp") != 0) _exit(126);
      execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      _exit(127);
    }
    // Wait until the exec completed, so /proc shows sleep and not our copy.
    // /proc/PID/exe switches before the new argv area is set up, so wait for
    // the argv too.
    const std::vector<std::string> kArgv = {"sleep", "30"};
    for (int i = 0; i < 200 && readProcessInfo(pid_, 0).argv != kArgv; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~SleepChild() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

TEST(ProcessInfoTest, ReadsTheTestProcessItself) {
  ProcessInfo p = readProcessInfo(getpid(), gettid());
  EXPECT_EQ(p.pid, getpid());
  EXPECT_EQ(p.tid, gettid());
  EXPECT_EQ(p.ppid, getppid());
  EXPECT_GT(p.start_time, 0u);
  EXPECT_EQ(p.uid, getuid());
  EXPECT_EQ(p.euid, geteuid());
  EXPECT_EQ(p.gid, getgid());
  EXPECT_EQ(p.exe, readLinkOrEmpty("/proc/self/exe"));
  char cwd[PATH_MAX];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(p.cwd, cwd);
  EXPECT_EQ(p.argv, ::testing::internal::GetArgvs());
  EXPECT_FALSE(p.comm.empty());
  EXPECT_EQ(p.start_time, readStartTime(getpid()));
  EXPECT_EQ(readParentPid(getpid()), getppid());
}

TEST(ProcessInfoTest, ReadsAnotherProcess) {
  SleepChild child;
  ProcessInfo p = readProcessInfo(child.pid(), 0);
  EXPECT_EQ(p.pid, child.pid());
  EXPECT_EQ(p.tid, child.pid());
  EXPECT_EQ(p.ppid, getpid());
  EXPECT_EQ(p.comm, "sleep");
  EXPECT_EQ(p.exe, realPath("/bin/sleep"));
  EXPECT_EQ(p.cwd, "/tmp");
  EXPECT_EQ(p.argv, (std::vector<std::string>{"sleep", "30"}));
}

// A thread's comm and cwd are its own (cwd after unshare(CLONE_FS)); the
// process's argv, exe and start time are the group's.
TEST(ProcessInfoTest, ReadsAThreadsOwnCommAndCwd) {
  pid_t tid = 0;
  bool ready = false, done = false;
  std::mutex m;
  std::condition_variable cv;
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "sv-worker");
    if (unshare(CLONE_FS) != 0 || chdir("/usr") != 0) tid = -1;
    std::unique_lock lock(m);
    if (tid == 0) tid = gettid();
    ready = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return ready; });
  }
  ASSERT_GT(tid, 0) << "unshare(CLONE_FS) or chdir failed";
  ProcessInfo p = readProcessInfo(getpid(), tid);
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  worker.join();
  EXPECT_EQ(p.tid, tid);
  EXPECT_EQ(p.comm, "sv-worker");
  EXPECT_EQ(p.cwd, "/usr");
  EXPECT_EQ(p.exe, readLinkOrEmpty("/proc/self/exe"));
  EXPECT_EQ(p.start_time, readStartTime(getpid()));
  EXPECT_EQ(p.argv, ::testing::internal::GetArgvs());
}

// An argv longer than one read's buffer is read whole (a short read ends it).
TEST(ProcessInfoTest, ReadsAnArgvLongerThanOneRead) {
  const std::string longArg(10000, 'x');
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its sleep goes with it
    execl("/bin/sh", "sh", "-c", "sleep 30; :", "sh", longArg.c_str(), "end",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  const std::vector<std::string> want = {"sh", "-c", "sleep 30; :", "sh", longArg, "end"};
  ProcessInfo p;
  for (int i = 0; i < 200 && (p = readProcessInfo(pid, 0)).argv != want; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(p.argv, want);
}

TEST(ProcessInfoTest, DeadPidLeavesFieldsEmpty) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);  // reaped: /proc/<pid> is gone
  ProcessInfo p = readProcessInfo(pid, pid);
  EXPECT_EQ(p.pid, pid);
  EXPECT_EQ(p.ppid, -1);
  EXPECT_EQ(p.start_time, 0u);
  EXPECT_EQ(p.uid, ProcessInfo::kUnknownId);
  EXPECT_TRUE(p.comm.empty());
  EXPECT_TRUE(p.exe.empty());
  EXPECT_TRUE(p.cwd.empty());
  EXPECT_TRUE(p.argv.empty());
  EXPECT_EQ(readStartTime(pid), 0u);
  EXPECT_EQ(readParentPid(pid), -1);
}

TEST(ProcessCacheTest, HitsInvalidatesAndDetectsReuse) {
  SleepChild child;
  ProcessCache cache(4);
  auto a = cache.lookup(child.pid(), 0);
  auto b = cache.lookup(child.pid(), child.pid());
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(cache.reads(), 1u);
  // A known start time makes the hit free; a different one means pid reuse.
  auto c = cache.lookup(child.pid(), 0, a->start_time);
  EXPECT_EQ(c.get(), a.get());
  auto d = cache.lookup(child.pid(), 0, a->start_time + 1);
  EXPECT_NE(d.get(), a.get());
  EXPECT_EQ(cache.reads(), 2u);
  EXPECT_EQ(a->argv, (std::vector<std::string>{"sleep", "30"}));  // still valid after eviction

  cache.invalidate(child.pid());  // exec
  EXPECT_EQ(cache.size(), 0u);
  cache.setProfile(child.pid(), "git");
  auto e = cache.lookup(child.pid(), 0);
  EXPECT_EQ(e->profile, "git");
  EXPECT_EQ(cache.reads(), 3u);
  cache.setProfile(child.pid(), "ssh");
  EXPECT_EQ(e->profile, "ssh");
  cache.forget(child.pid());
  EXPECT_EQ(cache.lookup(child.pid(), 0)->profile, "");
}

TEST(ProcessCacheTest, EvictsLeastRecentlyUsed) {
  SleepChild c1, c2, c3;
  ProcessCache cache(2);
  cache.lookup(c1.pid(), 0);
  cache.lookup(c2.pid(), 0);
  cache.lookup(c1.pid(), 0);  // c1 now most recent
  cache.lookup(c3.pid(), 0);  // evicts c2
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.reads(), 3u);
  cache.lookup(c1.pid(), 0);
  EXPECT_EQ(cache.reads(), 3u);
  cache.lookup(c2.pid(), 0);
  EXPECT_EQ(cache.reads(), 4u);
}

// A process that is exiting has lost its mm before it leaves /proc: exe and
// cmdline read empty while stat still answers (a zombie shows the same). The
// image source (the kernel's exec records) names it then; a live process is
// read from /proc and the source is not asked.
TEST(ProcessCacheTest, AskTheImageSourceForAProcessWithoutAnImage) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_GT(pid, 0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, pid, &info, WEXITED | WNOWAIT), 0);  // a zombie, not reaped
  ASSERT_NE(readStartTime(pid), 0u) << "the zombie is still in /proc";
  EXPECT_EQ(readProcessInfo(pid, pid).exe, "") << "a zombie has no image";

  ProcessCache without;
  EXPECT_EQ(without.lookup(pid, pid)->exe, "");

  int asked = 0;
  uint64_t asked_start = 0;
  ProcessCache cache;
  cache.setImageSource([&](int p, uint64_t start_time, ProcessInfo& i) {
    ++asked;
    asked_start = start_time;
    if (p != pid) return;
    i.exe = "/usr/bin/python3";
    i.argv = {"python3", "-c", "pass"};
  });
  auto named = cache.lookup(pid, pid);
  EXPECT_EQ(named->exe, "/usr/bin/python3");
  EXPECT_EQ(named->argv, (std::vector<std::string>{"python3", "-c", "pass"}));
  EXPECT_EQ(asked_start, readStartTime(pid)) << "asked for this instance of the pid";

  SleepChild live;
  EXPECT_EQ(cache.lookup(live.pid(), 0)->exe, realPath("/bin/sleep"));
  EXPECT_EQ(asked, 1) << "a live process is read from /proc only";
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace sv::supervisor
