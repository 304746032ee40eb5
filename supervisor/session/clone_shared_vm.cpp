// clone3 with a child function, which libc does not offer; see the header.
#include "supervisor/session/clone_shared_vm.h"

#include <sys/syscall.h>

#include <cerrno>

namespace sv::supervisor {

#if defined(__x86_64__) && !defined(SV_SANITIZED_BUILD)
long clone3Calling(clone_args* args, int (*fn)(void*), void* arg) {
  // The child starts after the syscall instruction with every register but
  // rax (0) and rsp (the top of its stack) as the parent had them: fn and arg
  // wait in r8/r9, which syscalls preserve. It never returns into the
  // parent's frames; rbp = 0 ends backtraces there.
  long ret;
  register long fn_reg asm("r8") = reinterpret_cast<long>(fn);
  register long arg_reg asm("r9") = reinterpret_cast<long>(arg);
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xor %%ebp, %%ebp\n\t"
      "mov %%r9, %%rdi\n\t"
      "call *%%r8\n\t"
      "mov %%eax, %%edi\n\t"
      "mov %[exit_nr], %%eax\n\t"
      "syscall\n\t"
      "ud2\n"
      "1:"
      : "=a"(ret)
      : "a"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof *args), "r"(fn_reg),
        "r"(arg_reg), [exit_nr] "i"(SYS_exit)
      : "rcx", "r11", "memory");
  return ret;
}

long clone3ParentExits(clone_args* args, int exit_code) {
  long ret;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jle 1f\n\t"
      "mov %[code], %%edi\n\t"
      "mov %[exit_group_nr], %%eax\n\t"
      "syscall\n\t"
      "ud2\n"
      "1:"
      : "=a"(ret)
      : "a"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof *args), [code] "r"(exit_code),
        [exit_group_nr] "i"(SYS_exit_group)
      : "rcx", "r11", "memory");
  return ret;
}

long rawSyscall(long nr, long a, long b, long c) {
  long ret;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a), "S"(b), "d"(c)
               : "rcx", "r11", "memory");
  return ret;
}
#else
long clone3Calling(clone_args*, int (*)(void*), void*) { return -ENOSYS; }
long clone3ParentExits(clone_args*, int) { return -ENOSYS; }
long rawSyscall(long, long, long, long) { return -ENOSYS; }
#endif

}  // namespace sv::supervisor
