// Tracee: the ptrace requests the ptrace backend makes of one task.
//
// Every call must come from the tracing thread (the kernel ties a tracee to
// the thread that attached it). Plain wrappers with Result/Status, plus the
// two compound steps: reading a seccomp stop, and mapping the scratch region
// into a new image (scratch.h) by making the task run one mmap.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace sv::tracer {

// PTRACE_SEIZE with every option the backend relies on: EXITKILL (the tree
// dies with its tracer), TRACESECCOMP, TRACECLONE/FORK/VFORK (each new task
// traced from its first instruction), TRACEEXEC, TRACESYSGOOD. EPERM here
// usually means the task is traced already (a debugger, strace -f).
Status seizeTask(pid_t pid);

// A seccomp stop as the filter sent it.
struct SeccompStop {
  uint32_t nr = 0;
  uint32_t arch = 0;
  uint64_t instruction_pointer = 0;
  uint64_t args[6] = {};
  uint32_t ret_data = 0;  // SECCOMP_RET_DATA of the RET_TRACE
};
// PTRACE_GET_SYSCALL_INFO at a PTRACE_EVENT_SECCOMP stop.
Result<SeccompStop> seccompStopOf(pid_t tid);
// True when the task's syscall stop is an entry (false: an exit).
Result<bool> atSyscallEntry(pid_t tid);

Result<user_regs_struct> registersOf(pid_t tid);
Status setRegisters(pid_t tid, const user_regs_struct& regs);

// At a seccomp stop: the syscall does not run and returns `value` (-errno
// for a failure).
Status skipSyscall(pid_t tid, int64_t value);
// The task's syscall number (orig_rax) and argument registers. At a seccomp
// stop: the syscall runs as `nr` with `args` instead. At its exit: what the
// task sees, and what runs if a signal makes the kernel restart it.
Status setSyscall(pid_t tid, long nr, const uint64_t (&args)[6]);

enum class Resume { Continue, ToSyscallExit, Listen };
// PTRACE_CONT / PTRACE_SYSCALL / PTRACE_LISTEN, delivering `sig` (0: none).
Status resumeTask(pid_t tid, Resume how, int sig = 0);

Result<unsigned long> eventMessageOf(pid_t tid);

// Writes `bytes` at `addr` of the task's memory, read-only pages included
// (through `mem_fd`, the task's /proc/PID/mem, else PTRACE_POKEDATA).
Status writeTaskMemory(pid_t tid, int mem_fd, uint64_t addr, std::string_view bytes);

// At a PTRACE_EVENT_EXEC stop: lets execve return, then makes the task run
// mmap(kBase, kBytes, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE)
// from its entry point and puts everything back, leaving it stopped at its
// first instruction. A signal that arrived meanwhile is returned (to be sent
// again once the task runs; 0: none).
Result<int> mapScratch(pid_t tid);

}  // namespace sv::tracer
