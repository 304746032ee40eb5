// Tracee: see tracee.h.
#include "tracer/ptrace/tracee.h"

#include <linux/elf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tracer/ptrace/scratch.h"

namespace sv::tracer {
namespace {

long request(__ptrace_request req, pid_t tid, void* addr, void* data) {
  return ::ptrace(req, tid, addr, data);
}

}  // namespace

Status seizeTask(pid_t pid) {
  const long options = PTRACE_O_EXITKILL | PTRACE_O_TRACESECCOMP | PTRACE_O_TRACECLONE |
                       PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
                       PTRACE_O_TRACESYSGOOD;
  if (request(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(options)) != 0)
    return errnoError("PTRACE_SEIZE");
  return {};
}

Result<SeccompStop> seccompStopOf(pid_t tid) {
  __ptrace_syscall_info info{};
  const long n = request(PTRACE_GET_SYSCALL_INFO, tid, reinterpret_cast<void*>(sizeof info), &info);
  if (n < 0) return errnoError("PTRACE_GET_SYSCALL_INFO");
  if (info.op != PTRACE_SYSCALL_INFO_SECCOMP) return Error{EPROTO, "not a seccomp stop"};
  SeccompStop stop;
  stop.nr = static_cast<uint32_t>(info.seccomp.nr);
  stop.arch = info.arch;
  stop.instruction_pointer = info.instruction_pointer;
  for (int i = 0; i < 6; ++i) stop.args[i] = info.seccomp.args[i];
  stop.ret_data = info.seccomp.ret_data;
  return stop;
}

Result<bool> atSyscallEntry(pid_t tid) {
  __ptrace_syscall_info info{};
  if (request(PTRACE_GET_SYSCALL_INFO, tid, reinterpret_cast<void*>(sizeof info), &info) < 0)
    return errnoError("PTRACE_GET_SYSCALL_INFO");
  return info.op == PTRACE_SYSCALL_INFO_ENTRY;
}

Result<user_regs_struct> registersOf(pid_t tid) {
  user_regs_struct regs{};
  iovec io{&regs, sizeof regs};
  if (request(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &io) != 0)
    return errnoError("PTRACE_GETREGSET");
  return regs;
}

Status setRegisters(pid_t tid, const user_regs_struct& regs) {
  iovec io{const_cast<user_regs_struct*>(&regs), sizeof regs};
  if (request(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &io) != 0)
    return errnoError("PTRACE_SETREGSET");
  return {};
}

Status skipSyscall(pid_t tid, int64_t value) {
  auto regs = registersOf(tid);
  if (!regs) return regs.error();
  regs->orig_rax = static_cast<unsigned long long>(-1);  // no syscall runs
  regs->rax = static_cast<unsigned long long>(value);
  return setRegisters(tid, *regs);
}

Status setSyscall(pid_t tid, long nr, const uint64_t (&args)[6]) {
  auto regs = registersOf(tid);
  if (!regs) return regs.error();
  regs->orig_rax = static_cast<unsigned long long>(nr);
  regs->rdi = args[0];
  regs->rsi = args[1];
  regs->rdx = args[2];
  regs->r10 = args[3];
  regs->r8 = args[4];
  regs->r9 = args[5];
  return setRegisters(tid, *regs);
}

Status resumeTask(pid_t tid, Resume how, int sig) {
  const __ptrace_request req = how == Resume::Continue      ? PTRACE_CONT
                               : how == Resume::ToSyscallExit ? PTRACE_SYSCALL
                                                              : PTRACE_LISTEN;
  if (request(req, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig))) != 0)
    return errnoError("ptrace resume");
  return {};
}

Result<unsigned long> eventMessageOf(pid_t tid) {
  unsigned long msg = 0;
  if (request(PTRACE_GETEVENTMSG, tid, nullptr, &msg) != 0) return errnoError("PTRACE_GETEVENTMSG");
  return msg;
}

Status writeTaskMemory(pid_t tid, int mem_fd, uint64_t addr, std::string_view bytes) {
  if (mem_fd >= 0 &&
      ::pwrite(mem_fd, bytes.data(), bytes.size(), static_cast<off_t>(addr)) ==
          static_cast<ssize_t>(bytes.size()))
    return {};
  // Word by word; the last word keeps the bytes beyond the string.
  for (size_t at = 0; at < bytes.size(); at += sizeof(long)) {
    long word = 0;
    const size_t n = std::min(sizeof word, bytes.size() - at);
    if (n < sizeof word) {
      errno = 0;
      word = request(PTRACE_PEEKDATA, tid, reinterpret_cast<void*>(addr + at), nullptr);
      if (errno != 0) return errnoError("PTRACE_PEEKDATA");
    }
    std::memcpy(&word, bytes.data() + at, n);
    if (request(PTRACE_POKEDATA, tid, reinterpret_cast<void*>(addr + at),
                reinterpret_cast<void*>(word)) != 0)
      return errnoError("PTRACE_POKEDATA");
  }
  return {};
}

namespace {

// Waits for the next stop of `tid` alone. A signal-delivery stop is noted
// in *pending (suppressed now, sent again later) and waited past.
Result<int> nextStop(pid_t tid, int* pending, Resume how) {
  for (;;) {
    int status = 0;
    if (::waitpid(tid, &status, __WALL) < 0) {
      if (errno == EINTR) continue;
      return errnoError("waitpid");
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) return Error{ESRCH, "the task died"};
    const int sig = WSTOPSIG(status);
    const int event = status >> 16;
    if (event == 0 && sig != (SIGTRAP | 0x80)) {  // a signal for the task
      if (sig != SIGSTOP || *pending == 0) *pending = sig;
      if (auto st = resumeTask(tid, how); !st) return st.error();
      continue;
    }
    return status;
  }
}

}  // namespace

Result<int> mapScratch(pid_t tid) {
  int pending = 0;
  // 1. Let execve return: its exit stop is where registers may be changed.
  if (auto st = resumeTask(tid, Resume::ToSyscallExit); !st) return st.error();
  for (;;) {
    auto status = nextStop(tid, &pending, Resume::ToSyscallExit);
    if (!status) return status.error();
    if (WSTOPSIG(*status) == (SIGTRAP | 0x80)) break;
    if (auto st = resumeTask(tid, Resume::ToSyscallExit); !st) return st.error();
  }
  auto saved = registersOf(tid);
  if (!saved) return saved.error();
  // 2. A syscall instruction at the entry point, run once.
  const uint64_t ip = saved->rip;
  errno = 0;
  const long text = request(PTRACE_PEEKTEXT, tid, reinterpret_cast<void*>(ip), nullptr);
  if (errno != 0) return errnoError("PTRACE_PEEKTEXT");
  long patched = text;
  const unsigned char syscall_insn[2] = {0x0f, 0x05};
  std::memcpy(&patched, syscall_insn, sizeof syscall_insn);
  if (request(PTRACE_POKETEXT, tid, reinterpret_cast<void*>(ip), reinterpret_cast<void*>(patched)) != 0)
    return errnoError("PTRACE_POKETEXT");
  user_regs_struct call = *saved;
  call.rax = __NR_mmap;
  call.orig_rax = static_cast<unsigned long long>(-1);
  call.rdi = scratch::kBase;
  call.rsi = scratch::kBytes;
  call.rdx = PROT_READ;
  call.r10 = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;
  call.r8 = static_cast<unsigned long long>(-1);
  call.r9 = 0;
  Status restored;
  long result = -ENOSYS;
  auto put_back = [&] {
    (void)request(PTRACE_POKETEXT, tid, reinterpret_cast<void*>(ip), reinterpret_cast<void*>(text));
    restored = setRegisters(tid, *saved);
  };
  if (auto st = setRegisters(tid, call); !st) {
    put_back();
    return st.error();
  }
  // 3. Entry, the guard's seccomp stop (it traces an mmap this low), exit.
  if (auto st = resumeTask(tid, Resume::ToSyscallExit); !st) return st.error();
  for (;;) {
    auto status = nextStop(tid, &pending, Resume::ToSyscallExit);
    if (!status) return status.error();
    if (WSTOPSIG(*status) == (SIGTRAP | 0x80)) {
      auto entry = atSyscallEntry(tid);
      if (!entry) return entry.error();
      if (!*entry) {
        auto regs = registersOf(tid);
        if (!regs) return regs.error();
        result = static_cast<long>(regs->rax);
        break;
      }
    }
    if (auto st = resumeTask(tid, Resume::ToSyscallExit); !st) return st.error();
  }
  put_back();
  if (!restored) return restored.error();
  if (result != static_cast<long>(scratch::kBase))
    return Error{result < 0 ? static_cast<int>(-result) : EEXIST,
                 "map the scratch region at its fixed address"};
  return pending;
}

}  // namespace sv::tracer
