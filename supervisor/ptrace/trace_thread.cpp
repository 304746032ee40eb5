// TraceThread: see trace_thread.h.
#include "supervisor/ptrace/trace_thread.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <iterator>
#include <mutex>
#include <utility>

#include "common/read_file.h"
#include "policy/path.h"
#include "supervisor/audit/denial_line.h"
#include "supervisor/proc/process_events.h"
#include "tracer/bpf/exec_file_id.h"
#include "tracer/ptrace/scratch.h"
#include "tracer/ptrace/tracee.h"

namespace sv::supervisor {
namespace {

constexpr uint64_t kSupervisorSpace = 1;

void say(const std::string& line) { std::fprintf(stderr, "supervise: ptrace: %s\n", line.c_str()); }

// The clone flags of the clone/fork/vfork a task is stopped in.
unsigned long cloneFlagsOf(pid_t tid) {
  auto regs = tracer::registersOf(tid);
  if (!regs) return 0;
  switch (static_cast<long>(regs->orig_rax)) {
    case __NR_clone: return regs->rdi;
    case __NR_vfork: return CLONE_VM | CLONE_VFORK;
    default: return 0;  // fork
  }
}

// Does this address-space call reach the scratch region (scratch.h)?
bool touchesScratch(uint32_t nr, const uint64_t (&a)[6]) {
  using tracer::scratch::overlaps;
  switch (nr) {
    case __NR_mmap: return overlaps(a[0], a[1]) && (a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE));
    case __NR_mprotect:
    case __NR_munmap:
    case __NR_madvise:
    case __NR_pkey_mprotect:
    case __NR_remap_file_pages: return overlaps(a[0], a[1]);
    case __NR_mremap: return overlaps(a[0], a[1]) || ((a[3] & MREMAP_FIXED) && overlaps(a[4], a[2]));
    case __NR_shmat:
      return (a[2] & SHM_REMAP) && a[1] != 0 &&
             a[1] < tracer::scratch::kBase + tracer::scratch::kBytes;
  }
  return false;
}

}  // namespace

TraceThread::TraceThread(NotifyHandler& handler, PtraceAnswer& answer, AuditLog& audit, pid_t root,
                         TraceOptions options)
    : handler_(handler), answer_(answer), audit_(audit), root_(root), options_(std::move(options)) {
  processes_.setProcessRoot(options_.process_root);
}

Result<std::unique_ptr<TraceThread>> TraceThread::start(NotifyHandler& handler,
                                                        PtraceAnswer& answer, AuditLog& audit,
                                                        pid_t root, TraceOptions options) {
  std::unique_ptr<TraceThread> self(new TraceThread(handler, answer, audit, root, options));
  self->exit_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!self->exit_fd_) return errnoError("eventfd for the tracing thread");
  struct Start {
    TraceThread* self;
    std::promise<Status> seized;
  } start{self.get(), {}};
  auto seized = start.seized.get_future();
  // Every signal blocked in it: they belong to the loop's signalfd.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int err = pthread_create(
      &self->thread_, nullptr,
      [](void* arg) noexcept -> void* {
        auto* s = static_cast<Start*>(arg);
        TraceThread* t = s->self;
        Status st = tracer::seizeTask(t->root_);
        const bool ok = st.ok();
        s->seized.set_value(std::move(st));  // `s` is gone after this
        if (ok) t->run();
        return nullptr;
      },
      &start);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) return Error{err, "pthread_create for the tracing thread"};
  self->joinable_ = true;
  Status st = seized.get();
  if (!st) {
    pthread_join(self->thread_, nullptr);
    self->joinable_ = false;
    if (st.error().code == EPERM)
      return Error{EPERM, "cannot trace the command: it is traced already (supervise itself "
                          "under a debugger or strace -f?); run it untraced, or use --backend host"};
    return st.error();
  }
  return self;
}

TraceThread::~TraceThread() {
  if (!joinable_) return;
  // The tree ends with the session: each task we know of, killed; the
  // thread then sees the last exits, finds no tracee left and returns.
  {
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    for (const auto& entry : tasks_) ::kill(entry.first, SIGKILL);
  }
  pthread_join(thread_, nullptr);
}

std::optional<siginfo_t> TraceThread::rootExit() const {
  if (!root_exited_.load(std::memory_order_acquire)) return std::nullopt;
  return root_exit_;
}

void TraceThread::run() {
  Task& root = tasks_[root_];
  root.known = true;
  root.space = kSupervisorSpace;
  spaces_[kSupervisorSpace].tasks = 1;
  for (;;) {
    int status = 0;
    const pid_t tid = ::waitpid(-1, &status, __WALL | __WNOTHREAD);
    if (tid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: no tracee left
    }
    std::lock_guard<std::mutex> lock(tasks_mutex_);
    try {
      onStatus(tid, status);
    } catch (...) {
      // Out of memory: the task must not run on undecided.
      ::kill(tid, SIGKILL);
    }
  }
  // No tracee left and the command's exit never reached us: its real parent
  // (the launcher's thread) reaped it first, which happens when the whole
  // tree is killed at once (cgroup.kill: the exec daemon's abort). The loop
  // waits for this report: without it the session would never end.
  if (!root_exited_.load(std::memory_order_acquire))
    onExit(root_, SIGKILL);  // a wait status: killed by SIGKILL
}

void TraceThread::onStatus(pid_t tid, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) return onExit(tid, status);
  if (!WIFSTOPPED(status)) return;
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  Task& task = tasks_[tid];
  switch (event) {
    case PTRACE_EVENT_SECCOMP: return onSeccomp(tid);
    case PTRACE_EVENT_EXEC: return onExec(tid);
    case PTRACE_EVENT_CLONE:
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK: return onNewTask(tid, event);
    case PTRACE_EVENT_STOP:
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
        (void)tracer::resumeTask(tid, tracer::Resume::Listen);  // a group stop: stay stopped
        return;
      }
      if (!task.known) {
        task.held = true;  // a new task: until its parent's event says what it shares
        return;
      }
      return resume(tid);
    case 0:
      if (sig == (SIGTRAP | 0x80)) return onSyscallExit(tid);
      return resume(tid, sig);  // a signal for the task: delivered
    default: return resume(tid);
  }
}

void TraceThread::resume(pid_t tid, int sig) {
  auto it = tasks_.find(tid);
  const bool to_exit = it != tasks_.end() && it->second.to_exit;
  (void)tracer::resumeTask(tid, to_exit ? tracer::Resume::ToSyscallExit : tracer::Resume::Continue,
                           sig);
}

uint64_t TraceThread::newSpace(bool scratch) {
  const uint64_t id = next_space_++;
  Space& space = spaces_[id];
  space.scratch = scratch;
  space.tasks = 1;
  return id;
}

void TraceThread::leaveSpace(uint64_t id) {
  auto it = spaces_.find(id);
  if (it != spaces_.end() && --it->second.tasks <= 0) spaces_.erase(it);
}

void TraceThread::releaseSlot(Task& task) {
  if (task.slot < 0) return;
  const int slot = std::exchange(task.slot, -1);
  auto it = spaces_.find(task.space);
  if (it == spaces_.end()) return;
  Space& space = it->second;
  space.used &= ~(uint64_t(1) << slot);
  // The first waiter the slot can be written for takes it (one gone
  // meanwhile is refused and let go: its SIGKILL ends it). A tid that now
  // names another task (a thread's exec took the leader's) is passed over.
  while (!space.waiting.empty()) {
    const pid_t next = space.waiting.front();
    space.waiting.pop_front();
    auto waiter = tasks_.find(next);
    if (waiter == tasks_.end() || !waiter->second.waiting_open ||
        waiter->second.space != it->first)
      continue;
    Task& t = waiter->second;
    const PtraceVerdict open = std::move(*t.waiting_open);
    t.waiting_open.reset();
    const bool running = runOpen(next, t, space, open);
    if (!running) (void)tracer::skipSyscall(next, -EACCES);
    resume(next);
    if (running) return;
  }
}

void TraceThread::onExit(pid_t tid, int status) {
  if (auto it = tasks_.find(tid); it != tasks_.end()) {
    if (it->second.waiting_open) {
      if (auto sp = spaces_.find(it->second.space); sp != spaces_.end())
        std::erase(sp->second.waiting, tid);
    }
    releaseSlot(it->second);
    leaveSpace(it->second.space);
    tasks_.erase(it);
  }
  processes_.forget(tid);
  if (tid != root_) return;
  siginfo_t info{};
  info.si_signo = SIGCHLD;
  info.si_pid = tid;
  if (WIFEXITED(status)) {
    info.si_code = CLD_EXITED;
    info.si_status = WEXITSTATUS(status);
  } else {
    info.si_code = WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED;
    info.si_status = WTERMSIG(status);
  }
  root_exit_ = info;
  root_exited_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  ssize_t unused = ::write(exit_fd_.get(), &one, sizeof one);
  (void)unused;
}

void TraceThread::onNewTask(pid_t parent, int event) {
  auto msg = tracer::eventMessageOf(parent);
  if (msg) {
    const pid_t child = static_cast<pid_t>(*msg);
    const Task& from = tasks_[parent];
    const bool shares_memory = event == PTRACE_EVENT_VFORK || (cloneFlagsOf(parent) & CLONE_VM);
    Task& task = tasks_[child];
    task.known = true;
    if (shares_memory) {
      task.space = from.space;
      ++spaces_[from.space].tasks;
    } else {
      // fork copies the address space, the scratch region with it.
      auto it = spaces_.find(from.space);
      task.space = newSpace(it != spaces_.end() && it->second.scratch);
    }
    if (task.held) {
      task.held = false;
      resume(child);
    }
  }
  resume(parent);
}

void TraceThread::onExec(pid_t tid) {
  // A thread other than the leader that execs takes the leader's tid.
  if (auto former = tracer::eventMessageOf(tid); former && pid_t(*former) != tid) {
    auto it = tasks_.find(pid_t(*former));
    if (it != tasks_.end()) {
      Task moved = std::move(it->second);
      tasks_.erase(it);
      if (auto old = tasks_.find(tid); old != tasks_.end()) {
        leaveSpace(old->second.space);
        tasks_.erase(old);
      }
      tasks_[tid] = std::move(moved);
    }
  }
  Task& task = tasks_[tid];
  task.known = true;
  releaseSlot(task);
  task.to_exit = false;
  processes_.invalidate(tid);
  // The binary the kernel loaded must be one the handler judged (binary or
  // "#!" interpreter): a path swapped after the decision loads another one,
  // which dies here before its first instruction.
  if (task.exec_judged) {
    task.exec_judged = false;
    char exe[64];
    std::snprintf(exe, sizeof exe, "/proc/%d/exe", tid);
    UniqueFd loaded(::open(exe, O_PATH | O_CLOEXEC));
    auto id = loaded ? tracer::execFileIdOf(loaded.get()) : Result<tracer::ExecFileId>(Error{ESRCH, ""});
    bool approved =
        id && std::find(task.exec_files.begin(), task.exec_files.end(), *id) != task.exec_files.end();
    // The loader's program was an argument: the new image's argv (its own
    // stack, which nothing else can write yet) must be the one decided on.
    if (approved && !task.exec_args.empty()) {
      std::string argv;
      approved = readFileInto("/proc/" + std::to_string(tid) + "/cmdline", argv,
                              task.exec_args.size() + 1) &&
                 argv == task.exec_args;
    }
    if (!approved) {
      char path[4096];
      const ssize_t n = ::readlink(exe, path, sizeof path - 1);
      const std::string binary =
          n > 0 ? std::string(policy::pathInRoot({path, size_t(n)}, options_.process_root))
                : std::string("?");
      const bool kill = !options_.audit_mode;
      reportExecMismatch(tid, binary, kill);
      if (kill) {
        ::kill(tid, SIGKILL);
        return resume(tid);
      }
    }
  }
  task.exec_files.clear();
  task.exec_args.clear();
  leaveSpace(task.space);
  task.space = newSpace(false);
  auto mapped = tracer::mapScratch(tid);
  if (!mapped) {
    if (mapped.error().code == ESRCH) return;  // it died meanwhile
    say("cannot map the scratch region into pid " + std::to_string(tid) + " (" +
        mapped.error().message() + "); killed before its first instruction");
    ::kill(tid, SIGKILL);
    return resume(tid);
  }
  spaces_[task.space].scratch = true;
  resume(tid);
  if (*mapped != 0) ::syscall(SYS_tgkill, tid, tid, *mapped);  // what arrived meanwhile
}

void TraceThread::reportExecMismatch(pid_t tid, const std::string& binary, bool killed) {
  AuditEvent ev;
  ev.category = "exec";
  ev.operation = "exec";
  ev.decision = killed ? "deny" : "would-deny";
  ev.enforced_by = "ptrace";
  ev.rule_id = kExecRecheckRule;
  ev.rule_name = "exec re-check (PTRACE_EVENT_EXEC)";
  ev.rule_reason =
      "the binary the kernel loaded is not the file approved at execve (a path swapped after the "
      "check, or an interpreter nobody judged: binfmt_misc); killed before it ran";
  ev.exec.path = binary;
  auto process = processes_.lookup(tid, tid);
  ev.process = process.get();
  const uint64_t seq = audit_.emit(ev);
  if (!options_.quiet)
    printDenial(killed ? "killed" : "would kill", "exec of", binary, kExecRecheckRule,
                ev.rule_reason, {audit_.session().session_id, seq});
}

void TraceThread::onSeccomp(pid_t tid) {
  auto stop = tracer::seccompStopOf(tid);
  if (!stop) return resume(tid);  // gone (SIGKILL) or not a seccomp stop
  if (stop->ret_data == tracer::scratch::kGuardTraceData) return onGuard(tid, stop->args, stop->nr);
  seccomp_notif req{};
  req.id = ++next_id_;
  req.pid = static_cast<uint32_t>(tid);
  req.data.nr = static_cast<int>(stop->nr);
  req.data.arch = stop->arch;
  req.data.instruction_pointer = stop->instruction_pointer;
  for (int i = 0; i < 6; ++i) req.data.args[i] = stop->args[i];
  Task& task = tasks_[tid];
  task.call.nr = static_cast<long>(stop->nr);
  std::copy(std::begin(stop->args), std::end(stop->args), task.call.args);
  answer_.begin(req.id);
  handler_.handle(req);
  apply(tid);
}

void TraceThread::onGuard(pid_t tid, const uint64_t (&args)[6], uint32_t nr) {
  const Task& task = tasks_[tid];
  auto it = spaces_.find(task.space);
  if (it != spaces_.end() && it->second.scratch && touchesScratch(nr, args)) {
    (void)tracer::skipSyscall(tid, -EPERM);
  }
  resume(tid);
}

void TraceThread::apply(pid_t tid) {
  PtraceVerdict& v = answer_.verdict();
  Task& task = tasks_[tid];
  using Kind = PtraceVerdict::Kind;
  switch (v.kind) {
    case Kind::None: (void)tracer::skipSyscall(tid, -ENOSYS); break;
    case Kind::Fail: (void)tracer::skipSyscall(tid, -v.value); break;
    case Kind::Value: (void)tracer::skipSyscall(tid, v.value); break;
    case Kind::Proceed: break;
    case Kind::Exec:
      task.exec_judged = true;
      task.exec_files = std::move(v.files);
      task.exec_args = std::move(v.args);
      break;
    case Kind::Dup: {
      const uint64_t args[6] = {uint64_t(v.fd), uint64_t(v.cloexec ? F_DUPFD_CLOEXEC : F_DUPFD), 0,
                                0, 0, 0};
      if (!replaceSyscall(tid, task, __NR_fcntl, args)) (void)tracer::skipSyscall(tid, -EACCES);
      break;
    }
    case Kind::Open: {
      auto sp = spaces_.find(task.space);
      if (sp == spaces_.end() || !sp->second.scratch) {
        // The command before its first exec shares the supervisor's memory,
        // which no task of the tree can write: its own path is as decided.
        break;
      }
      Space& space = sp->second;
      if (v.path.size() >= tracer::scratch::kHowOffset) {
        (void)tracer::skipSyscall(tid, -ENAMETOOLONG);
        break;
      }
      if (~space.used == 0) {
        // Every slot is held by an open still running (one blocked on a
        // FIFO holds its slot while it waits): this one stays stopped until
        // releaseSlot hands it one. Failing it would be an EAGAIN no
        // program expects from open.
        task.waiting_open = std::move(v);
        space.waiting.push_back(tid);
        return;
      }
      if (!runOpen(tid, task, space, v)) (void)tracer::skipSyscall(tid, -EACCES);
      break;
    }
  }
  resume(tid);
}

bool TraceThread::runOpen(pid_t tid, Task& task, Space& space, const PtraceVerdict& v) {
  const unsigned slot = static_cast<unsigned>(__builtin_ctzll(~space.used));
  const uint64_t at = tracer::scratch::slotAddress(slot);
  if (!space.mem) {
    char mem[64];
    std::snprintf(mem, sizeof mem, "/proc/%d/mem", tid);
    space.mem = UniqueFd(::open(mem, O_RDWR | O_CLOEXEC));
  }
  open_how how{};
  how.flags = static_cast<uint64_t>(static_cast<unsigned>(v.flags));  // the handler masked them
  if (v.flags & (O_CREAT | __O_TMPFILE)) how.mode = v.mode & 07777;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string_view path(v.path.c_str(), v.path.size() + 1);  // with its NUL
  const std::string_view how_bytes(reinterpret_cast<const char*>(&how), sizeof how);
  const uint64_t args[6] = {uint64_t(AT_FDCWD), at, at + tracer::scratch::kHowOffset, sizeof how,
                            0, 0};
  if (!tracer::writeTaskMemory(tid, space.mem.get(), at, path) ||
      !tracer::writeTaskMemory(tid, space.mem.get(), at + tracer::scratch::kHowOffset, how_bytes) ||
      !replaceSyscall(tid, task, __NR_openat2, args))
    return false;
  // The kernel reads the slot when the syscall runs: it stays the task's
  // until the syscall returns.
  space.used |= uint64_t(1) << slot;
  task.slot = static_cast<int>(slot);
  return true;
}

bool TraceThread::replaceSyscall(pid_t tid, Task& task, long nr, const uint64_t (&args)[6]) {
  if (!tracer::setSyscall(tid, nr, args)) return false;
  task.to_exit = true;
  return true;
}

void TraceThread::onSyscallExit(pid_t tid) {
  Task& task = tasks_[tid];
  // The syscall ABI keeps the argument registers, and compiled code may
  // rely on it. And a call a signal interrupted (-ERESTARTSYS and kin) is
  // restarted from orig_rax and these registers: it must run as the task
  // made it, to be decided again, not from a slot that is another
  // task's from now on.
  if (task.to_exit) (void)tracer::setSyscall(tid, task.call.nr, task.call.args);
  releaseSlot(task);
  task.to_exit = false;
  resume(tid);
}

}  // namespace sv::supervisor
