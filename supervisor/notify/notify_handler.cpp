// NotifyHandler: per-syscall decode, decision and emulation; see notify_handler.h.
#include "supervisor/notify/notify_handler.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <vector>
#include <memory>
#include <thread>

#include "common/proc_status.h"
#include "common/read_file.h"
#include "policy/compile.h"
#include "supervisor/audit/limits.h"
#include "supervisor/audit/denial_line.h"
#include "supervisor/notify/loader_exec.h"
#include "tracer/seccomp/target_memory.h"

namespace sv::supervisor {
namespace {

using policy::Operation;
using policy::Verdict;

constexpr int kPathMax = 4096;
// The flags open(2) knows. openat(2) ignores unknown bits but openat2(2)
// rejects them (EINVAL), so the emulation passes only these on.
constexpr unsigned kOpenFlags = O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |
                                O_NONBLOCK | O_DSYNC | O_ASYNC | O_DIRECT | O_LARGEFILE |
                                O_DIRECTORY | O_NOFOLLOW | O_NOATIME | O_CLOEXEC | O_SYNC |
                                O_PATH | O_TMPFILE;
constexpr int kRaceRetries = 3;  // a create that lost a race with a concurrent rename/symlink
std::string procFd(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Anonymous objects reached through /proc/PID/fd/N (pipes, sockets, memfds'
// "anon_inode:"): the target already holds them, so reopening grants nothing.
bool isAnonymous(std::string_view real_path) { return real_path.empty() || real_path[0] != '/'; }

std::string_view verb(Operation op) {
  switch (op) {
    case Operation::Read: return "read of";
    case Operation::Write: return "write to";
    case Operation::Exec: return "exec of";
    case Operation::Connect: return "connect to";
    case Operation::Socket: return "socket of family";
  }
  return "access to";
}

// The process (thread group) a thread belongs to; the tid itself when that
// can't be read. Profiles belong to processes: a thread of a process that
// switched profile must get that profile, and after exec by any thread the
// process keeps the thread group's id.
pid_t threadGroupOf(pid_t tid) { return static_cast<pid_t>(readStatusNumber(tid, "Tgid", 10, tid)); }

// The fields every user-notify decision event has; `err` is returned when enforced.
void fillDecision(AuditEvent& ev, const seccomp_data& data, const char* category,
                  const char* operation, const char* syscall, const policy::Decision& decision,
                  bool enforce, int err, const char* enforced_by) {
  const bool deny = decision.verdict == Verdict::Deny;
  ev.category = category;
  ev.operation = operation;
  ev.syscall = syscall;
  ev.syscall_nr = data.nr;
  ev.arch = data.arch;
  ev.decision = !deny ? "allow" : enforce ? "deny" : "would-deny";
  ev.enforced_by = enforced_by;
  ev.err = enforce ? err : 0;
  ev.rule_id.assign(decision.rule_id);
  ev.rule_reason.assign(decision.reason);
  ev.rule_name.assign(decision.name);
  ev.default_rule = policy::isDefaultRule(decision.rule_id);
}

}  // namespace

// One notification in flight.
struct NotifyHandler::Call {
  const seccomp_notif& req;
  pid_t tid;
  pid_t tgid = 0;
  const char* syscall = "";
  const char* operation = "";
  const char* category = "file";
  AuditEvent& event;  // the handler's, reset per call (keeps its strings' capacity)
  // Allowed decisions' events are encoded and written once the answer is
  // sent (an exec's: the target waits for nothing it does not need).
  bool events_after_answer = false;
  bool answered = false;
  bool flags_in_memory = false;  // openat2: a CONTINUE would let the kernel read them again
};

NotifyHandler::NotifyHandler(const policy::Engine& engine, SyscallAnswer& answer,
                             AuditLog& audit, NotifyOptions options)
    : engine_(engine), answer_(answer), audit_(audit), options_(std::move(options)) {
  has_profiles_ = !engine_.policy().profiles.empty();
  processes_.setProcessRoot(options_.process_root);
  // The command starts in a profile (supervise exec --profile): recorded
  // before its first syscall can be notified, inherited like a switch.
  if (has_profiles_ && !options_.root_profile.empty() && options_.root_pid > 0)
    setProfile(options_.root_pid, options_.root_profile);
  if (options_.watched_umask) umask_.watchFrom(*options_.watched_umask);
  raw_.reserve(kPathMax);
  abs_.reserve(2 * kPathMax + 2);  // a base directory of up to PATH_MAX, plus the argument
}

void NotifyHandler::handleOne() {
  seccomp_notif* req = nullptr;
  auto got = answer_.listener()->receive(req);
  if (!got.ok() || !*got) return;
  handle(*req);
}

void NotifyHandler::handle(const seccomp_notif& req) {
  event_.reset();
  Call call{.req = req, .tid = static_cast<pid_t>(req.pid), .event = event_};
  try {
    dispatch(call);
  } catch (...) {
    // Out of memory or similar: fail this syscall, never unwind into libuv.
    if (!call.answered) answer_.fail(req.id, ENOMEM);
    call.answered = true;
  }
  if (!call.answered) {
    // A syscall we asked for but do not emulate: fail closed rather than hang the target.
    answer_.fail(req.id, ENOSYS);
  }
  emitHeldEvents();
  ++handled_;
}

void NotifyHandler::dispatch(Call& c) {
  const DecodedCall d = decodeCall(c.req.data);
  c.syscall = d.name;
  switch (d.kind) {
    case CallKind::Open: return handleOpen(c, d.dirfd, d.path, d.flags, d.mode, 0);
    case CallKind::Openat2: return handleOpenat2(c, d);
    case CallKind::Create: return handleCreate(c, d.dirfd, d.path, d.mode, d.dev, d.file_type);
    case CallKind::Remove: return handleRemove(c, d.dirfd, d.path, d.flags);
    case CallKind::Rename:
      return handleRename(c, d.dirfd, d.path, d.dirfd2, d.path2, static_cast<unsigned>(d.flags));
    case CallKind::Link: return handleLink(c, d.dirfd, d.path, d.dirfd2, d.path2, d.flags);
    case CallKind::Symlink: return handleSymlink(c, d.path, d.dirfd2, d.path2);
    case CallKind::Truncate: return handleTruncate(c, d.path, d.length);
    case CallKind::Chmod: return handleChmod(c, d.dirfd, d.path, d.mode, d.flags);
    case CallKind::Chown: return handleChown(c, d.dirfd, d.path, d.uid, d.gid, d.flags);
    case CallKind::Utimes: return handleUtimes(c, d.dirfd, d.path, d.times, d.times_kind, d.flags);
    case CallKind::Xattr:
      return handleXattr(c, d.dirfd, d.path, d.arg, d.value, d.size, d.flags, d.follow, d.remove);
    case CallKind::Exec: return handleExec(c, d.dirfd, d.path, d.arg, d.flags);
    case CallKind::Socket: return handleSocket(c, d);
    case CallKind::Umask: return handleUmask(c, d.mode);
    case CallKind::Unsupported: return;  // answered ENOSYS by handleOne
  }
}

bool NotifyHandler::resolveTarget(Call& c, int dirfd, uint64_t path, bool follow,
                                  ResolvedPath* out) {
  if (path != 0) return resolve(c, dirfd, path, {.follow_final = follow}, out);
  char link[64];
  std::snprintf(link, sizeof link, "/proc/%d/fd/%d", c.tid, dirfd);
  const int obj = ::open(link, O_PATH | O_CLOEXEC);  // the magic link: the open file's inode
  const int err = errno;
  // The tid may be reused once the target is gone: trust the fd only while
  // the notification is live.
  if (!answer_.pending(c.req.id)) {
    if (obj >= 0) ::close(obj);
    c.answered = true;
    return false;
  }
  if (obj < 0) {
    finish(c, err == ENOENT ? -EBADF : -err);
    return false;
  }
  out->object.reset(obj);
  auto real = fdPath(obj, options_.process_root);
  out->real_path = real ? std::move(*real) : std::string();
  return true;
}

void NotifyHandler::continueRechecked(Call& c, Operation op, std::string_view path,
                                      const policy::Decision& decision, int found) {
  // Looked up before the answer: once it runs, the process may exec.
  std::shared_ptr<const ProcessInfo> process;
  if (options_.audit_allows) process = processForEvent(c);
  c.answered = true;
  tracer::NotifyListener& listener = *answer_.listener();
  const Status taken = found < 0 ? listener.respondErrno(c.req.id, -found)
                                 : listener.respondContinue(c.req.id);
  // Not taken: the target is gone, and what was read may have been another
  // process's (its pid reused); nothing is recorded.
  if (!taken || !options_.audit_allows) return;
  emitDecision(c, op, path, decision, false, process.get());
}

bool NotifyHandler::readPath(Call& c, uint64_t addr, std::string* out, bool verify) {
  char buf[kPathMax];
  auto len = tracer::readTargetString(c.tid, addr, buf, sizeof buf);
  // The pid in the notification may be reused once the target is gone:
  // anything read from it is trusted only if the notification is still live
  // (or, !verify, once an answer to it is taken: continueRechecked). A
  // failed read is answered only while it is live.
  if ((verify || !len) && !answer_.pending(c.req.id)) {
    c.answered = true;  // nothing left to answer
    return false;
  }
  if (!len) {
    finish(c, -len.error().code);
    return false;
  }
  out->assign(buf, *len);
  return true;
}

// The lexical fast path (target_path.h) is exact only for paths whose
// normal form is the path itself, modulo inner "." and "//": no "..", which
// would skip a symlink's target, no trailing "/", which the kernel checks.
static bool fastEligible(std::string_view p) {
  if (p.empty() || p.back() == '/') return false;
  // A final "." means the directory itself to the kernel (rmdir("d/.") is
  // EINVAL), but normalising would drop it and act on "d".
  if (p == "." || p.ends_with("/.")) return false;
  for (size_t i = 0; (i = p.find("..", i)) != std::string_view::npos; i += 2) {
    const bool starts = i == 0 || p[i - 1] == '/';
    const bool ends = i + 2 == p.size() || p[i + 2] == '/';
    if (starts && ends) return false;
  }
  return true;
}

bool NotifyHandler::resolve(Call& c, int dirfd, uint64_t addr, const ResolveOptions& options,
                            ResolvedPath* out, std::string* raw) {
  std::string local;
  std::string& path = raw ? *raw : local;
  if (!readPath(c, addr, &path)) return false;
  if (c.tgid == 0) c.tgid = c.tid;
  if (fastEligible(path) && !options.beneath && !options.no_symlinks && !options.no_magiclinks) {
    std::string abs;
    // /proc/PID/... takes the walk, which keeps other processes out of reach.
    if (lexicalTargetPath(c.tid, c.tgid, dirfd, path, options_.process_root, abs) && abs != "/" &&
        !abs.starts_with("/proc/")) {
      const size_t slash = abs.rfind('/');
      const std::string dir = slash == 0 ? "/" : abs.substr(0, slash);
      int parent = openNoSymlinks(dir, O_PATH | O_DIRECTORY);
      if (parent >= 0) {
        out->parent.reset(parent);
        out->name = abs.substr(slash + 1);
        int obj = ::openat(parent, out->name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (obj >= 0) out->object.reset(obj);
        struct stat st;
        const bool final_link = obj >= 0 && options.follow_final &&
                                ::fstat(obj, &st) == 0 && S_ISLNK(st.st_mode);
        if (!final_link && (obj >= 0 || errno == ENOENT)) {
          out->real_path = std::move(abs);
          return true;
        }
        *out = ResolvedPath{};
      } else if (parent != -ELOOP) {
        finish(c, parent);
        return false;
      }
      // A symlink on the way (/bin -> usr/bin on merged-/usr systems): where
      // only the object matters, let the kernel follow it in one call.
      if (options.object_only) {
        const int obj = openFollowingSymlinks(abs, options.follow_final);
        if (obj >= 0) {
          out->object.reset(obj);
          if (auto real = fdPath(obj, options_.process_root)) {
            out->real_path = std::move(*real);
            return true;
          }
          *out = ResolvedPath{};
        }
      }
    }
  }
  ResolveOptions scoped = options;
  scoped.session_cgroup = options_.session_cgroup;
  scoped.process_root = options_.process_root;
  auto resolved = resolveTargetPath(c.tid, c.tgid, dirfd, path, scoped);
  if (!resolved) {
    finish(c, -resolved.error().code);
    return false;
  }
  *out = std::move(*resolved);
  return true;
}

std::string_view NotifyHandler::profileOf(pid_t tgid) {
  if (!has_profiles_) return {};
  if (options_.profile_of) {
    // Under bpf-lsm the kernel switched the profile (no exec was notified):
    // the events' process.profile learns it here, as setProfile() does.
    kernel_profile_ = options_.profile_of(tgid);
    if (!kernel_profile_.empty()) processes_.setProfile(tgid, kernel_profile_);
    return kernel_profile_;
  }
  // Walk up to the nearest process whose profile we know (set by an exec
  // switch); the command itself starts in the base policy. An entry counts
  // only while its process is the one it was made for: a pid reused after
  // that process exited must not inherit its profile.
  pid_t pid = tgid;
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    auto it = profiles_.find(pid);
    if (it != profiles_.end()) {
      if (it->second.start_time == readStartTime(pid)) {
        if (pid != tgid) {  // inherited across fork
          it = profiles_.insert_or_assign(tgid, ProfileEntry{it->second.profile,
                                                             readStartTime(tgid)}).first;
          processes_.setProfile(tgid, it->second.profile);
        }
        return it->second.profile;
      }
      profiles_.erase(it);  // stale: that process is gone
    }
    if (pid == options_.root_pid) break;
    pid = readParentPid(pid);
  }
  return {};
}

void NotifyHandler::setProfile(pid_t tgid, std::string_view profile) {
  profiles_.insert_or_assign(tgid, ProfileEntry{std::string(profile), readStartTime(tgid)});
  processes_.setProfile(tgid, std::string(profile));  // the events' process.profile
}

policy::Decision NotifyHandler::decide(Call& c, Operation op, std::string_view real_path) {
  if (c.tgid == 0) c.tgid = c.tid;
  if (op != Operation::Exec && isAnonymous(real_path))
    return {Verdict::Allow, "reopen-held-object",
            "the process already holds this pipe, socket or anonymous file",
            "reopen of a held pipe, socket or anonymous file"};
  policy::Request request;
  request.op = op;
  request.path = real_path;
  request.profile = has_profiles_ ? profileOf(threadGroupOf(c.tid)) : std::string_view{};
  return engine_.decide(request);
}

bool NotifyHandler::permit(Call& c, Operation op, std::string_view real_path) {
  return record(c, op, real_path, decide(c, op, real_path));
}

bool NotifyHandler::record(Call& c, Operation op, std::string_view real_path,
                           const policy::Decision& decision) {
  const bool deny = decision.verdict == Verdict::Deny;
  // Audit mode enforces nothing but self-protection (Decision::binding): the
  // trail and the policy files stay out of the tree's reach in every mode.
  const bool enforce = deny && (!options_.audit_mode || decision.binding);

  uint64_t seq = 0;
  if (deny || options_.audit_allows || op == Operation::Exec) {
    auto process = processForEvent(c);
    if (!deny && c.events_after_answer) {
      fillDecisionEvent(c, real_path, decision, enforce);
      held_events_.push_back({c.event, std::move(process)});
    } else {
      emitHeldEvents();  // in the order they were decided
      seq = emitDecision(c, op, real_path, decision, enforce, process.get());
    }
  }
  if (deny) reportDenial(op, real_path, decision, enforce, seq);
  if (enforce) {
    finish(c, -EACCES);
    return false;
  }
  return true;
}

std::shared_ptr<const ProcessInfo> NotifyHandler::processForEvent(const Call& c) {
  if (!audit_.encodes()) return nullptr;
  return processes_.lookup(c.tgid, c.tid);
}

void NotifyHandler::fillDecisionEvent(Call& c, std::string_view real_path,
                                      const policy::Decision& decision, bool enforce) {
  AuditEvent& ev = c.event;
  fillDecision(ev, c.req.data, c.category, c.operation, c.syscall, decision, enforce, EACCES,
               answer_.enforcedBy());
  if (ev.category == std::string_view("exec"))
    ev.exec.path.assign(real_path);
  else
    ev.file.path.assign(real_path);
}

uint64_t NotifyHandler::emitDecision(Call& c, Operation, std::string_view real_path,
                                     const policy::Decision& decision, bool enforce,
                                     const ProcessInfo* process) {
  fillDecisionEvent(c, real_path, decision, enforce);
  c.event.process = process;
  const uint64_t seq = audit_.emit(c.event);
  c.event.process = nullptr;
  return seq;
}

void NotifyHandler::emitHeldEvents() {
  for (auto& [event, process] : held_events_) {
    event.process = process.get();
    audit_.emit(event);
  }
  held_events_.clear();
}

void NotifyHandler::reportDenial(Operation op, std::string_view path, const policy::Decision& d,
                                 bool enforced, uint64_t seq) {
  if (options_.quiet) return;
  printDenial(enforced ? "denied" : "would deny", verb(op),
              relativeToWorkspace(path, options_.workspace), d.rule_id, d.reason,
              {audit_.session().session_id, seq});
}

void NotifyHandler::finish(Call& c, long rc) {
  if (c.answered) return;
  c.answered = true;
  if (rc < 0)
    answer_.fail(c.req.id, static_cast<int>(-rc));
  else
    answer_.value(c.req.id, rc);
}


bool NotifyHandler::kernelRechecks(const Call& c, int flags) const {
  if (!kernel_rechecks_writes_.load(std::memory_order_acquire) || c.flags_in_memory) return false;
  // Creates stay emulated: no bind guards a name that does not exist yet.
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) return false;
  const int access = flags & O_ACCMODE;
  if (access == O_WRONLY) return true;
  // O_RDWR reads too, and so does O_RDONLY|O_TRUNC.
  const bool read_write = kernel_rechecks_read_write_.load(std::memory_order_relaxed);
  return access != O_RDONLY ? read_write : (flags & O_TRUNC) && read_write;
}

bool NotifyHandler::lexicalTarget(const Call& c, int dirfd) {
  return fastEligible(raw_) &&
         lexicalTargetPath(c.tid, c.tgid, dirfd, raw_, options_.process_root, abs_) &&
         !abs_.starts_with("/proc/");
}

bool NotifyHandler::continueIfNoSymlink(Call& c, Operation op, const policy::Decision& decision,
                                        bool follows_final) {
  // With no symlink on the way the name decided on is the object's own; a
  // name with no '/' has only its last component to check, the rest being
  // the cwd's (or dirfd's) physical path. An unlink or rmdir of one name
  // has nothing to check: it removes that name, whatever it names.
  const bool one_name = raw_.find('/') == std::string::npos;
  if (one_name && !follows_final) {
    continueRechecked(c, op, abs_, decision, 0);
    return true;
  }
  const int found = existsWithoutSymlinks(abs_, one_name);
  if (found == -ELOOP) return false;
  continueRechecked(c, op, abs_, decision, found);
  return true;
}

void NotifyHandler::handleOpen(Call& c, int dirfd, uint64_t path, int flags, unsigned mode,
                               uint64_t resolve_flags) {
  const bool tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
  const bool write =
      (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0 || tmpfile;
  const bool creat = (flags & O_CREAT) != 0 && !tmpfile;
  c.operation = tmpfile ? "create" : creat ? "create" : write ? "write" : "open";
  c.event.file.flags = flags;
  if (creat || tmpfile) c.event.file.mode = static_cast<int>(mode);

  ResolveOptions options;
  // The kernel does not follow a final symlink for O_NOFOLLOW, nor for
  // O_CREAT|O_EXCL (which must fail with EEXIST on any existing name).
  options.follow_final = !(flags & O_NOFOLLOW) && !(creat && (flags & O_EXCL));
  options.no_symlinks = resolve_flags & RESOLVE_NO_SYMLINKS;
  options.no_magiclinks = resolve_flags & RESOLVE_NO_MAGICLINKS;
  options.beneath = resolve_flags & RESOLVE_BENEATH;

  // Fast path: an allowed open of a symlink-free path is done in one openat2
  // (see lexicalTargetPath); anything else takes the walk below. It works in
  // the handler's two scratch strings, so it allocates nothing.
  // Where the kernel re-checks, the path is read without ID_VALID: a
  // CONTINUE the kernel takes proves the target lived throughout
  // (continueRechecked). Every other way on reads it again, checked.
  const bool rechecked =
      answer_.listener() && resolve_flags == 0 && kernelRechecks(c, flags);
  if (!readPath(c, path, &raw_, /*verify=*/!rechecked)) return;
  if (c.tgid == 0) c.tgid = c.tid;
  const Operation op = write ? Operation::Write : Operation::Read;
  if (answer_.listener() && resolve_flags == 0 && !tmpfile && lexicalTarget(c, dirfd)) {
    const policy::Decision decision = decide(c, op, abs_);
    if (decision.verdict == Verdict::Allow && rechecked) {
      // The kernel opens it itself (docs/enforcement.md, "Write opens the
      // kernel re-checks").
      if (continueIfNoSymlink(c, op, decision, /*follows_final=*/true)) return;
    } else if (decision.verdict == Verdict::Allow) {
      Reopen reopen;
      reopen.path = abs_;
      reopen.flags = static_cast<unsigned>(flags) & kOpenFlags;
      reopen.mode = mode;
      reopen.creat = creat;
      reopen.tid = c.tid;
      reopen.umask = &umask_;
      bool made = false;
      const int fd = reopen(O_NONBLOCK, &made);
      if (fd != -ELOOP) {
        record(c, op, abs_, decision);
        // A file made here is open in the blocking mode asked for already.
        return injectOpened(c, fd, made ? flags | O_NONBLOCK : flags, &reopen);
      }
    }
  }

  for (int attempt = 0; attempt < kRaceRetries; ++attempt) {
    ResolvedPath target;
    if (!resolve(c, dirfd, path, options, &target)) return;
    // Decide (and record) once per distinct path: a retry after a lost race
    // re-decides only if the path it reaches changed.
    if ((attempt == 0 || target.real_path != c.event.file.path) &&
        !permit(c, op, target.real_path))
      return;
    if (!answer_.listener()) {
      if (!target.object && !creat) return finish(c, -ENOENT);
      return openInTarget(c, target, flags, mode);
    }

    const int base_flags = flags & static_cast<int>(kOpenFlags);
    if (tmpfile) {
      if (!target.object) return finish(c, -ENOENT);
      int fd = ::openat(target.object.get(), ".", base_flags | O_CLOEXEC, mode & ~umask_.of(c.tid));
      return injectOpened(c, fd < 0 ? -errno : fd, flags | O_NONBLOCK, nullptr);
    }
    if (target.object) {
      if (creat && (flags & O_EXCL)) return finish(c, -EEXIST);
      struct stat st;
      if (::fstat(target.object.get(), &st) != 0) return finish(c, -errno);
      if (S_ISLNK(st.st_mode)) return finish(c, -ELOOP);  // O_NOFOLLOW on a symlink
      if (target.must_be_dir && !S_ISDIR(st.st_mode)) return finish(c, -ENOTDIR);
      // Reopen exactly the inode we decided on. O_NOFOLLOW would stop at the
      // magic link itself; the symlink case was handled above.
      Reopen reopen;
      reopen.object_fd = target.object.get();
      reopen.flags = static_cast<unsigned>(base_flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW));
      return injectOpened(c, reopen(O_NONBLOCK), flags, &reopen);
    }
    if (!creat) return finish(c, -ENOENT);
    if (target.must_be_dir) return finish(c, -EISDIR);
    // O_EXCL: only a file made here, never a FIFO (a blocking open) nor a
    // symlink that appeared at the name since we looked; anything there now
    // is re-resolved and decided on instead.
    int fd = ::openat(target.parent.get(), target.name.c_str(), base_flags | O_EXCL | O_CLOEXEC,
                      mode & ~umask_.of(c.tid));
    if (fd < 0 && errno == EEXIST && !(flags & O_EXCL)) continue;
    return injectOpened(c, fd < 0 ? -errno : fd, flags | O_NONBLOCK, nullptr);
  }
  finish(c, -ELOOP);
}

int NotifyHandler::Reopen::operator()(int extra, bool* made) const {
  if (object_fd >= 0) {
    char proc[64];
    std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", object_fd);
    const int fd = ::open(proc, static_cast<int>(flags) | O_CLOEXEC | extra);
    return fd < 0 ? -errno : fd;
  }
  // Most O_CREAT opens find the file already there: try without O_CREAT
  // first and read the target's umask only for a real create.
  const unsigned existing = (flags & ~O_CREAT) | static_cast<unsigned>(extra);
  int fd = -ENOENT;
  if (!(flags & O_EXCL)) fd = openNoSymlinks(path, existing);
  if (fd != -ENOENT || !creat) return fd;
  // The create itself with O_EXCL: the file it opens is new, so neither a
  // FIFO nor anything else `extra` (O_NONBLOCK) guards against. One made by
  // someone else since the try above is opened as it is now.
  fd = openNoSymlinks(path, flags | O_EXCL, mode & ~umask->of(tid));
  if (fd >= 0 && made) *made = true;
  if (fd == -EEXIST && !(flags & O_EXCL)) fd = openNoSymlinks(path, existing);
  return fd;
}

void NotifyHandler::injectOpened(Call& c, int fd, int flags, const Reopen* reopen) {
  // The open was tried with O_NONBLOCK: a FIFO's writer would otherwise block
  // the supervisor (and every other process waiting on a decision) until a
  // reader shows up. ENXIO is the kernel saying "that open would wait": do the
  // blocking open on a thread of its own, which answers when it completes.
  if (fd == -ENXIO && reopen && !(flags & O_NONBLOCK)) {
    c.answered = true;
    const int dup_listener = ::fcntl(answer_.listener()->fd(), F_DUPFD_CLOEXEC, 0);
    const uint64_t id = c.req.id;
    const bool cloexec = (flags & O_CLOEXEC) != 0;
    try {
      // The thread outlives this request's scratch strings and fds: it gets
      // its own copy of the path and of the object fd.
      std::string path(reopen->path);
      UniqueFd object(reopen->object_fd >= 0 ? ::fcntl(reopen->object_fd, F_DUPFD_CLOEXEC, 0) : -1);
      std::thread([dup_listener, id, cloexec, r = *reopen, path = std::move(path),
                   object = std::move(object)]() mutable {
        auto listener = tracer::NotifyListener::create(UniqueFd(dup_listener));
        if (!listener) return;
        r.path = path;
        r.object_fd = object.get();
        const int opened = r(0);
        if (opened < 0) {
          (void)listener->respondErrno(id, -opened);
          return;
        }
        UniqueFd owned(opened);
        if (auto added = listener->addFd(id, owned.get(), cloexec, true);
            !added && added.error().code != ENOENT)
          (void)listener->respondErrno(id, added.error().code);  // see injectOpened below
      }).detach();
    } catch (...) {
      ::close(dup_listener);
      answer_.fail(id, EAGAIN);
    }
    return;
  }
  if (fd < 0) return finish(c, fd);
  UniqueFd owned(fd);
  // Back to the blocking mode the caller asked for (F_SETFL takes only the
  // status flags; O_NONBLOCK absent clears it).
  if (!(flags & O_NONBLOCK))
    (void)::fcntl(fd, F_SETFL, flags & (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME));
  auto added = answer_.listener()->addFd(c.req.id, owned.get(), (flags & O_CLOEXEC) != 0, true);
  // ENOENT: the target is gone. Any other failure left the call unanswered,
  // and its caller would wait for ever: EBADF is ADDFD refusing an O_PATH
  // file (the kernel's fget() does not take them), which a walked path
  // (symlinks, "..") reopens through /proc/self/fd.
  if (!added && added.error().code != ENOENT) return finish(c, -added.error().code);
  c.answered = true;  // ADDFD|SEND answered it, or the target is gone
}

// The fd of `tid` that holds the anonymous object `object` ("pipe:[N]",
// "anon_inode:[eventfd]") open with access mode `accmode`; -1 if none.
static int heldFdOf(pid_t tid, std::string_view object, int accmode) {
  char dir[64];
  std::snprintf(dir, sizeof dir, "/proc/%d/fd", tid);
  std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir(dir), ::closedir);
  if (!fds) return -1;
  while (const dirent* e = ::readdir(fds.get())) {
    if (e->d_name[0] == '.') continue;
    char link[320], target[256];
    std::snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    const ssize_t n = ::readlink(link, target, sizeof target);
    if (n < 0 || std::string_view(target, size_t(n)) != object) continue;
    char info[320], buf[512];
    std::snprintf(info, sizeof info, "/proc/%d/fdinfo/%s", tid, e->d_name);
    const ssize_t got = readFilePrefix(info, buf, sizeof buf);
    if (got < 0) continue;
    auto flags = procStatusNumber<long>(std::string_view(buf, size_t(got)), "flags", 0, 8);
    if (flags && (*flags & O_ACCMODE) == accmode) return std::atoi(e->d_name);
  }
  return -1;
}

void NotifyHandler::openInTarget(Call& c, const ResolvedPath& target, int flags, unsigned mode) {
  if (target.object && isAnonymous(target.real_path)) {
    // Reopening a held pipe through /proc/PID/fd gives a new file of the
    // same pipe; a dup of the target's own fd with that access mode is the
    // same grant and needs no path the kernel would walk again. A socket
    // can't be reopened at all (ENXIO, as the kernel says).
    if (target.real_path.starts_with("socket:")) return finish(c, -ENXIO);
    const int fd = heldFdOf(c.tid, target.real_path, flags & O_ACCMODE);
    if (fd < 0) return finish(c, -EACCES);
    c.answered = true;
    return answer_.dupHeld(c.req.id, fd, (flags & O_CLOEXEC) != 0);
  }
  // A name can't reach an unlinked file (its /proc path ends " (deleted)").
  struct stat st;
  if (target.object && ::fstat(target.object.get(), &st) == 0 && st.st_nlink == 0 &&
      !S_ISDIR(st.st_mode))
    return finish(c, -ENOENT);
  if (target.real_path.empty() || target.real_path[0] != '/') return finish(c, -ENOENT);
  c.answered = true;
  // openat2 rejects the bits open(2) ignores: pass on only the ones it knows.
  answer_.openExactly(c.req.id, target.real_path, flags & static_cast<int>(kOpenFlags), mode);
}

void NotifyHandler::handleOpenat2(Call& c, const DecodedCall& d) {
  open_how how{};
  const size_t size = d.size;
  if (size < sizeof(uint64_t) * 3) return finish(c, -EINVAL);
  auto got = tracer::readTargetMemory(c.tid, d.arg, &how, std::min(size, sizeof how));
  if (!got || *got < sizeof how) return finish(c, -EFAULT);
  // RESOLVE_IN_ROOT and RESOLVE_NO_XDEV change the walk in ways we do not
  // emulate; RESOLVE_CACHED may always fail with EAGAIN (the caller retries
  // without it). Refuse what we can't honour rather than silently ignore it.
  if (how.resolve & (RESOLVE_IN_ROOT | RESOLVE_NO_XDEV)) return finish(c, -EOPNOTSUPP);
  if (how.resolve & RESOLVE_CACHED) return finish(c, -EAGAIN);
  if (how.flags > 0xffffffffULL) return finish(c, -EINVAL);
  c.flags_in_memory = true;
  handleOpen(c, d.dirfd, d.path, static_cast<int>(how.flags), static_cast<unsigned>(how.mode),
             how.resolve);
}

void NotifyHandler::handleCreate(Call& c, int dirfd, uint64_t path, unsigned mode, dev_t dev,
                                 int kind) {
  c.operation = kind == S_IFDIR ? "mkdir" : "mknod";
  c.event.file.mode = static_cast<int>(mode);
  ResolvedPath target;
  if (!resolve(c, dirfd, path, {.follow_final = false}, &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (target.object) return finish(c, -EEXIST);
  if (!target.parent) return finish(c, -EEXIST);
  const mode_t umask = umask_.of(c.tid);
  long rc;
  if (kind == S_IFDIR) {
    rc = ::mkdirat(target.parent.get(), target.name.c_str(), mode & ~umask & 07777);
  } else {
    const mode_t type = mode & S_IFMT;
    rc = ::mknodat(target.parent.get(), target.name.c_str(), type | (mode & ~umask & 07777), dev);
  }
  finish(c, rc < 0 ? -errno : 0);
}

// umask(2), watched, not decided (target_umask.h): recorded before it runs.
void NotifyHandler::handleUmask(Call& c, unsigned mask) {
  umask_.sawSet(static_cast<mode_t>(mask));
  c.answered = true;
  answer_.proceed(c.req.id);
}

void NotifyHandler::handleRemove(Call& c, int dirfd, uint64_t path, int flags) {
  c.operation = (flags & AT_REMOVEDIR) ? "rmdir" : "unlink";
  // Where the kernel re-checks, it removes an allowed name itself: a swap
  // after the decision meets Landlock, a bound protected name (EBUSY) or
  // one below it (EROFS) (docs/enforcement.md, "Write opens the kernel
  // re-checks"). The path is read unverified, as for such an open.
  if (answer_.listener() && kernel_rechecks_writes_.load(std::memory_order_acquire)) {
    if (!readPath(c, path, &raw_, /*verify=*/false)) return;
    if (c.tgid == 0) c.tgid = c.tid;
    if (lexicalTarget(c, dirfd)) {
      const policy::Decision decision = decide(c, Operation::Write, abs_);
      if (decision.verdict == Verdict::Allow &&
          continueIfNoSymlink(c, Operation::Write, decision, /*follows_final=*/false))
        return;
    }
  }
  ResolvedPath target;
  if (!resolve(c, dirfd, path, {.follow_final = false}, &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (!target.parent) return finish(c, -EBUSY);
  long rc = ::unlinkat(target.parent.get(), target.name.c_str(), flags & AT_REMOVEDIR);
  finish(c, rc < 0 ? -errno : 0);
}

// Test hook (SUPERVISE_TEST_RENAME_PAUSE_MS): a pause between the check of a
// moved tree and the rename, widening the window a racing create must hit.
static long renameTestPauseMs() {
  static const long ms = [] {
    const char* v = std::getenv("SUPERVISE_TEST_RENAME_PAUSE_MS");
    return v ? std::atol(v) : 0L;
  }();
  return ms;
}

void NotifyHandler::handleRename(Call& c, int olddir, uint64_t oldpath, int newdir,
                                 uint64_t newpath, unsigned flags) {
  c.operation = "rename";
  c.event.file.flags = static_cast<int>(flags);
  ResolvedPath from, to;
  if (!resolve(c, olddir, oldpath, {.follow_final = false}, &from)) return;
  if (!resolve(c, newdir, newpath, {.follow_final = false}, &to)) return;
  // Both names change: taking a protected file's name away is a write to it,
  // and so is putting another file in its place.
  c.event.file.path2 = to.real_path;
  if (!permit(c, Operation::Write, from.real_path)) return;
  c.event.file.path2 = from.real_path;
  if (!permit(c, Operation::Write, to.real_path)) return;
  c.event.file.path2 = to.real_path;
  if (!readRuleFollows(c, from.object, from.real_path, to.real_path)) return;
  if ((flags & RENAME_EXCHANGE) && !readRuleFollows(c, to.object, to.real_path, from.real_path))
    return;
  if (!from.parent || !to.parent) return finish(c, -EBUSY);
  // Renaming a directory renames everything below it: `mv .git g; echo >>
  // g/config; mv g .git` must not launder a protected file through a name
  // nobody protects. Check what is inside against both the old and the new
  // location (both ways for RENAME_EXCHANGE), with no create below either
  // directory between the check and the rename.
  std::vector<std::shared_ptr<void>> holds;  // released when this returns
  if (!holdMovingDirectory(c, from, &holds)) return;
  if ((flags & RENAME_EXCHANGE) && !holdMovingDirectory(c, to, &holds)) return;
  if (!directoryMovePermitted(c, from, to.real_path)) return;
  if ((flags & RENAME_EXCHANGE) && !directoryMovePermitted(c, to, from.real_path)) return;
  if (const long ms = renameTestPauseMs(); ms > 0) ::usleep(static_cast<useconds_t>(ms) * 1000);
  long rc = ::syscall(SYS_renameat2, from.parent.get(), from.name.c_str(), to.parent.get(),
                      to.name.c_str(), flags);
  finish(c, rc < 0 ? -errno : 0);
}

bool NotifyHandler::holdMovingDirectory(Call& c, const ResolvedPath& dir,
                                        std::vector<std::shared_ptr<void>>* holds) {
  if (!options_.hold_moving_directory || !dir.object) return true;
  struct stat st;
  if (::fstat(dir.object.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return true;
  auto held = options_.hold_moving_directory(dir.object.get());
  if (!held)
    return record(c, Operation::Write, dir.real_path,
                  {Verdict::Deny, "rename-unverifiable",
                   "creates below the directory cannot be held off while its tree is checked: " +
                       held.error().message()});
  holds->push_back(std::move(*held));
  return true;
}

bool NotifyHandler::readRuleFollows(Call& c, const UniqueFd& object, const std::string& from,
                                    const std::string& to) {
  struct stat st;
  if (object && ::fstat(object.get(), &st) == 0 && S_ISLNK(st.st_mode)) return true;
  return readRuleFollowsName(c, from, to);
}

bool NotifyHandler::readRuleFollowsName(Call& c, const std::string& from, const std::string& to) {
  const policy::Decision d = decide(c, Operation::Read, from);
  if (!d.deniedByRule() || decide(c, Operation::Read, to).deniedByRule()) return true;
  return record(c, Operation::Read, from, d);
}

bool NotifyHandler::directoryMovePermitted(Call& c, const ResolvedPath& dir,
                                           const std::string& new_path) {
  if (!dir.object) return true;
  struct stat st;
  if (::fstat(dir.object.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return true;
  // Entries are checked as they are now; one created inside while we look
  // must itself pass the create check under the old name. Renames of large
  // trees are refused rather than checked partially, and so are trees with
  // a directory we cannot list: this thread has the command's credentials
  // without capabilities, so `chmod 0 .git; mv .git g` would otherwise hide
  // .git/config from the walk (and nothing else judges what is below).
  constexpr size_t kMaxEntries = 200000;
  size_t seen = 0;
  // Enforced (EACCES), or recorded as would-deny in audit mode and allowed.
  auto refuse = [&](const std::string& path, const char* rule, const char* reason) {
    c.event.file.path2 = new_path;
    return record(c, Operation::Write, path, {Verdict::Deny, rule, reason});
  };
  std::vector<std::pair<UniqueFd, std::string>> stack;  // open dir, path relative to `dir`
  stack.emplace_back(UniqueFd(::open(procFd(dir.object.get()).c_str(),
                                     O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
                     std::string());
  if (!stack.back().first)
    return refuse(dir.real_path, "rename-unreadable-directory",
                  "a directory that cannot be listed may hold protected files");
  while (!stack.empty()) {
    auto [fd, rel] = std::move(stack.back());
    stack.pop_back();
    DIR* d = ::fdopendir(fd.release());
    if (!d) continue;
    // Every name of this level first, then its subdirectories: a protected
    // name here is the reason given, rather than a subdirectory we cannot list.
    std::vector<std::string> subdirs;
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++seen > kMaxEntries) {
        ::closedir(d);
        return refuse(dir.real_path, "rename-large-directory",
                      "too many entries to check for protected files");
      }
      const std::string child = rel.empty() ? std::string(name) : rel + "/" + std::string(name);
      const std::string old_path = dir.real_path + "/" + child;
      const std::string moved_path = new_path + "/" + child;
      for (const auto& [path, other] : {std::pair{&old_path, &moved_path}, {&moved_path, &old_path}}) {
        const policy::Decision d2 = decide(c, Operation::Write, *path);
        if (d2.deniedByRule()) {
          ::closedir(d);
          // Enforced (or recorded as would-deny in audit mode, then allowed).
          c.event.file.path2 = *other;
          return record(c, Operation::Write, *path, d2);
        }
      }
      c.event.file.path2 = moved_path;
      if (e->d_type != DT_LNK && !readRuleFollowsName(c, old_path, moved_path)) {
        ::closedir(d);
        return false;
      }
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {  // some filesystems don't fill d_type
        struct stat est;
        is_dir = ::fstatat(::dirfd(d), e->d_name, &est, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISDIR(est.st_mode);
      }
      if (is_dir) subdirs.emplace_back(name);
    }
    for (const std::string& name : subdirs) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      int sub = ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        stack.emplace_back(UniqueFd(sub), child);
      } else if (errno != ENOENT) {  // gone meanwhile: nothing left to move
        ::closedir(d);
        return refuse(dir.real_path + "/" + child, "rename-unreadable-directory",
                      "a directory that cannot be listed may hold protected files");
      }
    }
    ::closedir(d);
  }
  return true;
}

void NotifyHandler::handleLink(Call& c, int olddir, uint64_t oldpath, int newdir, uint64_t newpath,
                               int flags) {
  c.operation = "link";
  ResolvedPath from, to;
  if (!resolve(c, olddir, oldpath, {.follow_final = (flags & AT_SYMLINK_FOLLOW) != 0}, &from))
    return;
  if (!resolve(c, newdir, newpath, {.follow_final = false}, &to)) return;
  // A second name for a protected file would let it be written under that
  // name: linking counts as a write to the source.
  c.event.file.path2 = to.real_path;
  if (!permit(c, Operation::Write, from.real_path)) return;
  c.event.file.path2 = from.real_path;
  if (!permit(c, Operation::Write, to.real_path)) return;
  c.event.file.path2 = to.real_path;
  if (!readRuleFollows(c, from.object, from.real_path, to.real_path)) return;
  if (!from.object) return finish(c, -ENOENT);
  if (to.object) return finish(c, -EEXIST);
  if (!to.parent) return finish(c, -EEXIST);
  // linkat(fd, "", AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the procfs path
  // with AT_SYMLINK_FOLLOW links the same pinned inode without it.
  long rc = ::linkat(AT_FDCWD, procFd(from.object.get()).c_str(), to.parent.get(),
                     to.name.c_str(), AT_SYMLINK_FOLLOW);
  finish(c, rc < 0 ? -errno : 0);
}

void NotifyHandler::handleSymlink(Call& c, uint64_t target_addr, int newdir, uint64_t newpath) {
  c.operation = "symlink";
  char target[kPathMax];
  auto len = tracer::readTargetString(c.tid, target_addr, target, sizeof target);
  if (!len) return finish(c, -len.error().code);
  ResolvedPath at;
  if (!resolve(c, newdir, newpath, {.follow_final = false}, &at)) return;
  c.event.file.path2 = std::string(target, *len);
  // Creating the link is a write to its own name; what it points to is
  // checked when someone opens through it.
  if (!permit(c, Operation::Write, at.real_path)) return;
  if (at.object || !at.parent) return finish(c, -EEXIST);
  long rc = ::symlinkat(target, at.parent.get(), at.name.c_str());
  finish(c, rc < 0 ? -errno : 0);
}

void NotifyHandler::handleTruncate(Call& c, uint64_t path, off_t length) {
  c.operation = "truncate";
  ResolvedPath target;
  if (!resolve(c, AT_FDCWD, path, {}, &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (!target.object) return finish(c, -ENOENT);
  struct stat st;
  if (::fstat(target.object.get(), &st) != 0) return finish(c, -errno);
  if (S_ISDIR(st.st_mode)) return finish(c, -EISDIR);
  if (!S_ISREG(st.st_mode)) return finish(c, -EINVAL);
  UniqueFd fd(::open(procFd(target.object.get()).c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return finish(c, -errno);
  finish(c, ::ftruncate(fd.get(), length) < 0 ? -errno : 0);
}

void NotifyHandler::handleChmod(Call& c, int dirfd, uint64_t path, unsigned mode, int flags) {
  c.operation = "chmod";
  c.event.file.mode = static_cast<int>(mode);
  ResolvedPath target;
  if (!resolveTarget(c, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (!target.object) return finish(c, -ENOENT);
  struct stat st;
  if (::fstat(target.object.get(), &st) == 0 && S_ISLNK(st.st_mode)) return finish(c, -EOPNOTSUPP);
  long rc = ::chmod(procFd(target.object.get()).c_str(), mode);
  finish(c, rc < 0 ? -errno : 0);
}

void NotifyHandler::handleChown(Call& c, int dirfd, uint64_t path, uid_t uid, gid_t gid, int flags) {
  c.operation = "chown";
  ResolvedPath target;
  if (!resolveTarget(c, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (!target.object) return finish(c, -ENOENT);
  long rc = ::fchownat(target.object.get(), "", uid, gid, AT_EMPTY_PATH);
  finish(c, rc < 0 ? -errno : 0);
}

void NotifyHandler::handleUtimes(Call& c, int dirfd, uint64_t path, uint64_t times, int kind,
                                 int flags) {
  c.operation = "utimes";
  timespec ts[2];
  timespec* tsp = nullptr;
  if (times != 0) {
    if (kind == 0) {  // struct utimbuf
      utimbuf ub;
      auto got = tracer::readTargetMemory(c.tid, times, &ub, sizeof ub);
      if (!got || *got < sizeof ub) return finish(c, -EFAULT);
      ts[0] = {ub.actime, 0};
      ts[1] = {ub.modtime, 0};
    } else if (kind == 1) {  // struct timeval[2]
      timeval tv[2];
      auto got = tracer::readTargetMemory(c.tid, times, tv, sizeof tv);
      if (!got || *got < sizeof tv) return finish(c, -EFAULT);
      for (int i = 0; i < 2; ++i) ts[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
    } else {
      auto got = tracer::readTargetMemory(c.tid, times, ts, sizeof ts);
      if (!got || *got < sizeof ts) return finish(c, -EFAULT);
    }
    tsp = ts;
  }
  // utimensat(fd, NULL, ...) is futimens: the open file itself, decided too
  // (an owner needs no write access to set times).
  ResolvedPath target;
  if (!resolveTarget(c, dirfd, path, !(flags & AT_SYMLINK_NOFOLLOW), &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (!target.object) return finish(c, -ENOENT);
  long rc = ::utimensat(AT_FDCWD, procFd(target.object.get()).c_str(), tsp, 0);
  finish(c, rc < 0 ? -errno : 0);
}

void NotifyHandler::handleXattr(Call& c, int fd, uint64_t path, uint64_t name_addr,
                                uint64_t value_addr, size_t size, int flags, bool follow,
                                bool remove) {
  c.operation = remove ? "removexattr" : "setxattr";
  char name[256];
  auto len = tracer::readTargetString(c.tid, name_addr, name, sizeof name);
  if (!len) return finish(c, len.error().code == ENAMETOOLONG ? -ERANGE : -len.error().code);
  std::string value;
  if (!remove) {
    if (size > XATTR_SIZE_MAX) return finish(c, -E2BIG);
    value.resize(size);
    if (size > 0) {
      auto got = tracer::readTargetMemory(c.tid, value_addr, value.data(), size);
      if (!got || *got < size) return finish(c, -EFAULT);
    }
  }
  ResolvedPath target;
  if (!resolveTarget(c, fd, path, follow, &target)) return;
  if (!permit(c, Operation::Write, target.real_path)) return;
  if (!target.object) return finish(c, -ENOENT);
  struct stat st;
  if (::fstat(target.object.get(), &st) == 0 && S_ISLNK(st.st_mode)) return finish(c, -EPERM);
  // Through the procfs path the kernel reaches the pinned inode.
  const std::string p = procFd(target.object.get());
  long rc = remove ? ::removexattr(p.c_str(), name)
                   : ::setxattr(p.c_str(), name, value.data(), value.size(), flags);
  finish(c, rc < 0 ? -errno : 0);
}

bool NotifyHandler::noteExecFile(Call& c, int object_fd) {
  if (!rechecksExec()) return true;
  // Identified as the kernel will see it at exec (s_dev, i_ino). Not
  // identifiable means the re-check would kill it: refuse it here instead.
  auto id = tracer::execFileIdOf(object_fd);
  if (!id || exec_ids_.size() >= tracer::kMaxExecFiles) {
    finish(c, -EACCES);
    return false;
  }
  exec_ids_.push_back(*id);
  return true;
}

// The interpreter named by a script's "#!" line, or "" when `fd` is not a
// script (reads the first line, as binfmt_script does).
static std::string interpreterOf(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n < 3 || buf[0] != '#' || buf[1] != '!') return {};
  std::string_view line(buf + 2, static_cast<size_t>(n - 2));
  line = line.substr(0, line.find('\n'));
  const size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  line.remove_prefix(start);
  return std::string(line.substr(0, line.find_first_of(" \t")));
}

bool NotifyHandler::permitInterpreters(Call& c, const ResolvedPath& binary) {
  // The kernel opens a script's interpreter itself, in no syscall we see, so
  // judge it here by the same exec rules, following nested "#!" lines as far
  // as the kernel does (4 levels). A script rewritten between this read and
  // the kernel's is the exec race of docs/enforcement.md "exec".
  UniqueFd file(::open(procFd(binary.object.get()).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  for (int depth = 0; depth < 4 && file; ++depth) {
    const std::string interpreter = interpreterOf(file.get());
    if (interpreter.empty() || interpreter[0] != '/') return true;  // not a script, or relative
    auto resolved = resolveTargetPath(c.tid, c.tgid ? c.tgid : c.tid, AT_FDCWD, interpreter,
                                      {.process_root = options_.process_root});
    if (!resolved || !resolved->object) return true;  // the kernel's own exec will fail
    if (!permit(c, Operation::Exec, resolved->real_path)) return false;
    if (!noteExecFile(c, resolved->object.get())) return false;
    file.reset(::open(procFd(resolved->object.get()).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  }
  return true;
}

bool NotifyHandler::permitLoaderProgram(Call& c, uint64_t argv_addr, std::string* program) {
  // The whole argv, as the kernel will lay it out (each argument
  // NUL-terminated), within what the re-check can hash.
  std::vector<std::string> args;
  bool complete = false;
  for (size_t i = 0; argv_addr && exec_args_.size() < tracer::kMaxCheckedExecArgs; ++i) {
    uint64_t ptr = 0;
    auto got = tracer::readTargetMemory(c.tid, argv_addr + 8 * i, &ptr, sizeof ptr);
    if (!got || *got < sizeof ptr) break;
    if (ptr == 0) {
      complete = true;
      break;
    }
    char arg[tracer::kMaxCheckedExecArgs + 1];
    const size_t room = tracer::kMaxCheckedExecArgs - exec_args_.size();
    auto len = tracer::readTargetString(c.tid, ptr, arg, room + 1 < sizeof arg ? room + 1 : sizeof arg);
    if (!len) break;
    args.emplace_back(arg, *len);
    exec_args_.append(arg, *len);
    exec_args_ += '\0';
  }
  const auto refuse = [&](std::string why) {
    exec_args_.clear();
    return record(c, Operation::Exec, c.event.exec.path,
                  {Verdict::Deny, "exec-loader", std::move(why),
                   "the dynamic loader run as a program"});
  };
  if (!complete || exec_args_.size() > tracer::kMaxCheckedExecArgs)
    return refuse("the dynamic loader run as a program with more than " +
                  std::to_string(tracer::kMaxCheckedExecArgs) +
                  " bytes of arguments cannot be checked: run the program directly");
  // Pinned by the re-check, or by nothing (Landlock EXECUTE only): without
  // one the program argument could change after this read.
  if (!rechecksExec())
    return refuse("the dynamic loader run as a program needs the exec re-check to pin its "
                  "arguments (supervise doctor: process tracking)");
  const LoaderProgram which = loaderProgramOf(args);
  if (!which.error.empty()) return refuse(which.error);
  if (which.index == 0) return true;  // it runs no program
  auto resolved = resolveTargetPath(c.tid, c.tgid ? c.tgid : c.tid, AT_FDCWD, args[which.index],
                                    {.process_root = options_.process_root});
  if (!resolved || !resolved->object) return true;  // the loader will fail to open it
  *program = resolved->real_path;
  return permit(c, Operation::Exec, resolved->real_path);
}

void NotifyHandler::handleExec(Call& c, int dirfd, uint64_t path, uint64_t argv_addr, int flags) {
  c.category = "exec";
  c.operation = "exec";
  // The caller's fields are read before the answer (its exec replaces
  // them); the allow events are encoded and written after it.
  c.events_after_answer = audit_.encodes();
  ResolvedPath target;
  std::string raw;
  if (flags & AT_EMPTY_PATH) {
    char empty[2];
    auto len = tracer::readTargetString(c.tid, path, empty, sizeof empty);
    // execveat(fd, "", AT_EMPTY_PATH): the binary is the open fd itself.
    if (len && *len == 0 && !resolveTarget(c, dirfd, 0, true, &target)) return;
  }
  if (!target.object &&
      !resolve(c, dirfd, path,
               {.follow_final = !(flags & AT_SYMLINK_NOFOLLOW), .object_only = true}, &target,
               &raw))
    return;
  if (!target.object) return finish(c, -ENOENT);
  // argv, for the audit record only (never for the decision). One element and
  // one byte more than an event keeps, so the encoder sees a cut and flags it.
  for (size_t i = 0; i <= kAuditMaxArgs && argv_addr; ++i) {
    uint64_t ptr = 0;
    auto got = tracer::readTargetMemory(c.tid, argv_addr + 8 * i, &ptr, sizeof ptr);
    if (!got || *got < sizeof ptr || ptr == 0) break;
    char arg[kAuditMaxArgBytes + 2];
    auto len = tracer::readTargetString(c.tid, ptr, arg, sizeof arg);
    if (!len && len.error().code != ENAMETOOLONG) break;
    c.event.exec.argv.emplace_back(arg, len ? *len : sizeof arg - 1);  // a long one: its start
  }
  exec_ids_.clear();
  exec_args_.clear();
  if (!permit(c, Operation::Exec, target.real_path)) return;
  if (!noteExecFile(c, target.object.get())) return;
  if (!permitInterpreters(c, target)) return;
  std::string program;  // the loader's, when the binary is the dynamic loader
  if (isDynamicLoader(target.real_path)) {
    c.event.exec.path.assign(target.real_path);
    if (!permitLoaderProgram(c, argv_addr, &program)) return;
  }
  if (has_profiles_) {
    const pid_t process = threadGroupOf(c.tid);
    std::string_view current = profileOf(process);
    // A profile follows the program that runs, the loader's too.
    std::string_view next =
        engine_.profileAfterExec(current, program.empty() ? target.real_path : program);
    if (next != current && options_.on_profile_switch) {
      if (auto st = options_.on_profile_switch(process, current, next); !st) {
        reportDenial(Operation::Exec, target.real_path,
                     {Verdict::Deny, "profile-switch-failed", st.error().message()}, true);
        return finish(c, -EACCES);
      }
    }
    if (next != current) setProfile(process, next);
  }
  processes_.invalidate(c.tid);
  // exec can't be emulated: the kernel must load the binary. CONTINUE lets
  // the kernel re-read the path, so a racing thread could swap it after our
  // check. The decision is therefore pinned to the files we judged: the
  // re-check at sched_process_exec SIGKILLs this thread's exec unless the
  // binary about to run is one of them (docs/enforcement.md "exec"). Without
  // it, Landlock's EXECUTE rights are the floor.
  if (options_.exec_recheck) {
    if (auto st = options_.exec_recheck->approveExec(c.tid, exec_ids_, exec_args_); !st) {
      reportDenial(Operation::Exec, target.real_path,
                   {Verdict::Deny, "exec-recheck-unavailable", st.error().message()}, true);
      return finish(c, -EACCES);
    }
  }
  if (!answer_.pending(c.req.id)) {
    c.answered = true;
    return;
  }
  c.answered = true;
  answer_.execIf(c.req.id, exec_ids_, exec_args_);
}

// socket(2)/socketpair(2) of a family the filter does not allow in the kernel
// (policy::kAllowedSocketFamilies). Every argument is a register, so the
// decision is on exactly what the kernel will use: CONTINUE is safe here
// (a profile in network.mode all, or audit mode), unlike for a path.
// Refused with EPERM, as the cgroup programs refuse an inet socket.
void NotifyHandler::handleSocket(Call& c, const DecodedCall& d) {
  if (c.tgid == 0) c.tgid = c.tid;
  policy::Request request;
  request.op = Operation::Socket;
  request.family = d.family;
  request.sock_type = d.sock_type;
  request.protocol = d.protocol;
  request.profile = has_profiles_ ? profileOf(threadGroupOf(c.tid)) : std::string_view{};
  const policy::Decision decision = engine_.decide(request);
  const bool deny = decision.verdict == Verdict::Deny;
  const bool enforce = deny && !options_.audit_mode;
  const std::string family = policy::socketFamilyName(d.family);
  uint64_t seq = 0;
  if (deny || options_.audit_allows) {
    AuditEvent& ev = c.event;
    fillDecision(ev, c.req.data, "network", "socket", c.syscall, decision, enforce, EPERM,
                 answer_.enforcedBy());
    ev.network.family = family;
    if (d.family == policy::kFamilyNetlink) ev.network.proto = policy::netlinkProtocolName(d.protocol);
    auto process = processForEvent(c);
    ev.process = process.get();
    seq = audit_.emit(ev);
    ev.process = nullptr;
  }
  if (deny && !options_.quiet) {
    const std::string what =
        d.family == policy::kFamilyNetlink ? family + " (" + policy::netlinkProtocolName(d.protocol) + ")"
                                           : family;
    printDenial(options_.audit_mode ? "would deny" : "denied", verb(Operation::Socket), what,
                decision.rule_id, decision.reason, {audit_.session().session_id, seq});
  }
  if (enforce) return finish(c, -EPERM);
  c.answered = true;
  answer_.proceed(c.req.id);
}

}  // namespace sv::supervisor
