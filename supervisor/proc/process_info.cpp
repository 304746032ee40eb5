// Reads process identity from /proc for audit events, with an LRU cache.
//
// Every read tolerates ENOENT/ESRCH (the process is gone) and EACCES (a
// process in another user namespace) by leaving the field unknown: an audit
// event with a partial process is better than no event.
#include "supervisor/proc/process_info.h"

#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/proc_stat.h"
#include "common/proc_status.h"
#include "common/read_file.h"
#include "common/unique_fd.h"
#include "policy/path.h"
#include "supervisor/audit/limits.h"

namespace sv::supervisor {
namespace {

// argv can be huge (a linker command line); the audit event does not need
// more than this. The cut is at a byte boundary, the encoder deals with UTF-8.
// More than an event keeps (its elements plus a NUL after each), so a cut
// here is always one the encoder sees and flags as `truncated`.
constexpr size_t kMaxCmdlineBytes = 2 * kAuditMaxArgvBytes;
static_assert(kMaxCmdlineBytes > kAuditMaxArgvBytes + kAuditMaxArgs);

// ppid and starttime of /proc/PID/stat. False when the process is gone or
// the line is malformed.
bool readStatNumbers(int pid, int* ppid, uint64_t* start_time) {
  if (pid <= 0) return false;
  char buf[1024];
  const auto line = readProcStat(pid, buf, sizeof buf);
  const auto started = line ? procStatNumber<uint64_t>(*line, kStatStartTime) : std::nullopt;
  if (!started) return false;
  if (start_time) *start_time = *started;
  if (ppid) *ppid = procStatNumber<int>(*line, kStatParentPid).value_or(-1);
  return true;
}

}  // namespace

uint64_t readStartTime(int pid) {
  uint64_t start_time = 0;
  return readStatNumbers(pid, nullptr, &start_time) ? start_time : 0;
}

int readParentPid(int pid) {
  int ppid = -1;
  return readStatNumbers(pid, &ppid, nullptr) ? ppid : -1;
}

long readStatusNumber(int tid, const char* key, int base, long fallback) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", tid);
  char buf[2048];
  const ssize_t n = readFilePrefix(path, buf, sizeof buf);
  if (n < 0) return fallback;
  return procStatusNumber<long>(std::string_view(buf, size_t(n)), key, 0, base).value_or(fallback);
}

static std::string readLinkAt(int dirfd, const char* name) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlinkat(dirfd, name, buf, sizeof buf);
  if (n < 0) return {};
  return std::string(buf, size_t(n));
}

ProcessInfo readProcessInfo(int pid, int tid, std::string_view process_root) {
  ProcessInfo info;
  info.pid = pid;
  info.tid = tid > 0 ? tid : pid;
  if (pid <= 0) return info;
  // Every read goes through one open /proc/PID (and /proc/PID/task/TID for
  // another thread's fields): the first lookup of a new process's directory
  // is most of what these reads cost (~40 us here, each later one 5-18 us),
  // and a pid reused while we read fails the rest (ESRCH) instead of
  // mixing two processes into one event.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d", pid);
  UniqueFd proc(::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc) return info;
  UniqueFd task;
  if (info.tid != pid) {
    std::snprintf(path, sizeof path, "task/%d", info.tid);
    task.reset(::openat(proc.get(), path, O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  // The thread's own files: the process's when it is the leader, or when the
  // thread is gone.
  const int thread = task ? task.get() : proc.get();
  std::string buf;

  if (readFileIntoAt(proc.get(), "stat", buf, 4096, /*short_read_ends=*/true)) {
    const auto comm = procStatComm(buf);
    const auto started = procStatNumber<uint64_t>(buf, kStatStartTime);
    if (comm && started) {
      info.ppid = procStatNumber<int>(buf, kStatParentPid).value_or(-1);
      info.start_time = *started;
      info.comm = std::string(*comm);
    }
  }
  // comm is per thread.
  if (task && readFileIntoAt(task.get(), "comm", buf, 64, true)) {
    if (!buf.empty() && buf.back() == '\n') buf.pop_back();
    info.comm = buf;
  }
  // Credentials are per thread too (setresuid in one thread via raw syscall).
  // Uid and Gid come in the first lines: a prefix is enough.
  char status[2048];
  ssize_t got = readFilePrefixAt(thread, "status", status, sizeof status);
  if (got <= 0 && task) got = readFilePrefixAt(proc.get(), "status", status, sizeof status);
  if (got > 0) {
    // "Uid:\t1000\t1000\t1000\t1000": real, effective, saved, filesystem.
    const std::string_view text(status);
    if (auto v = procStatusNumber<uint32_t>(text, "Uid", 0)) info.uid = *v;
    if (auto v = procStatusNumber<uint32_t>(text, "Uid", 1)) info.euid = *v;
    if (auto v = procStatusNumber<uint32_t>(text, "Gid", 0)) info.gid = *v;
  }
  // The kernel copies the whole argument area up to what was asked for, so
  // a short read is the end.
  if (readFileIntoAt(proc.get(), "cmdline", buf, kMaxCmdlineBytes, true)) {
    // NUL-separated, usually NUL-terminated; a process that rewrote its
    // argv area may leave no terminator.
    size_t start = 0;
    while (start < buf.size()) {
      size_t end = buf.find('\0', start);
      if (end == std::string::npos) end = buf.size();
      info.argv.emplace_back(buf, start, end - start);
      start = end + 1;
    }
  }
  info.exe = readLinkAt(proc.get(), "exe");
  // The parent's binary tells "bash ran curl" from "node ran curl"; it may be
  // outside the supervised tree (the supervisor itself for the root process).
  if (info.ppid > 0) {
    std::snprintf(path, sizeof path, "/proc/%d/exe", info.ppid);
    info.parent_exe = readLinkAt(AT_FDCWD, path);
  }
  info.cwd = readLinkAt(thread, "cwd");
  if (info.cwd.empty() && task) info.cwd = readLinkAt(proc.get(), "cwd");
  for (std::string* name : {&info.exe, &info.parent_exe, &info.cwd})
    policy::takePathInRoot(*name, process_root);
  return info;
}

std::shared_ptr<const ProcessInfo> ProcessCache::lookup(int pid, int tid, uint64_t start_time) {
  if (tid <= 0) tid = pid;
  Key key{pid, tid};
  auto it = map_.find(key);
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t now_ns = uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
  if (it != map_.end()) {
    Entry& entry = *it->second;
    if (!start_time && now_ns - entry.checked_ns < kRecheckAfterNs) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return entry.info;
    }
    uint64_t now = start_time ? start_time : readStartTime(pid);
    // now == 0: the process is gone; the cached identity is the best we have
    // for an event it produced just before exiting.
    if (now == 0 || now == entry.info->start_time) {
      entry.checked_ns = now_ns;
      lru_.splice(lru_.begin(), lru_, it->second);
      return entry.info;
    }
    erase(it->second);  // pid reused by a different process
  }
  auto info = std::make_shared<ProcessInfo>(readProcessInfo(pid, tid, process_root_));
  ++reads_;
  if (image_source_ && (info->exe.empty() || info->argv.empty()))
    image_source_(pid, info->start_time, *info);
  if (auto p = profiles_.find(pid); p != profiles_.end()) info->profile = p->second;
  lru_.push_front(Entry{key, info, now_ns});
  map_[key] = lru_.begin();
  while (map_.size() > capacity_) erase(std::prev(lru_.end()));
  return info;
}

void ProcessCache::erase(List::iterator it) {
  map_.erase(it->key);
  lru_.erase(it);
}

void ProcessCache::invalidate(int pid) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->key.pid == pid) erase(it);
    it = next;
  }
}

void ProcessCache::forget(int pid) {
  invalidate(pid);
  profiles_.erase(pid);
}

void ProcessCache::setProfile(int pid, std::string profile) {
  for (auto& e : lru_) {
    if (e.key.pid == pid) e.info->profile = profile;
  }
  profiles_[pid] = std::move(profile);
}

}  // namespace sv::supervisor
