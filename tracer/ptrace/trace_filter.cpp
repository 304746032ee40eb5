// traceFilterOf(): see trace_filter.h.
#include "tracer/ptrace/trace_filter.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <cerrno>
#include <iterator>

#include "tracer/ptrace/scratch.h"

namespace sv::tracer {
namespace {

constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
constexpr uint32_t argLow(int i) { return offsetof(seccomp_data, args) + 8 * i; }  // little-endian
constexpr uint32_t argHigh(int i) { return argLow(i) + 4; }

// The guard: for the x86_64 ABI, an address-space call whose address
// argument (args[0]; also mremap's new address args[4]; shmat's args[1]) is
// below kGuardEnd goes to the tracer; everything else falls through to the
// program. Layout:
//   ld arch; jeq x86_64 else →program; ld nr;
//   per syscall: jeq nr →its block; ja →program;
//   per block, per argument a test: ld high; jeq 0 else →miss; ld low;
//     jge kGuardEnd →miss else →trace   (miss: the next test, or →program)
//   trace: ret TRACE|kGuardTraceData;  program: ...
std::vector<sock_filter> scratchGuard() {
  struct Check { uint32_t nr; std::vector<int> args; };
  const Check checks[] = {
      {__NR_mmap, {0}},           {__NR_mprotect, {0}},      {__NR_munmap, {0}},
      {__NR_madvise, {0}},        {__NR_pkey_mprotect, {0}}, {__NR_remap_file_pages, {0}},
      {__NR_mremap, {0, 4}},      {__NR_shmat, {1}},
  };
  constexpr size_t kTestLen = 4;
  const size_t n = std::size(checks);
  size_t tests = 0;
  for (const Check& c : checks) tests += c.args.size();
  const size_t dispatch = 3, no_match = dispatch + n, first_block = no_match + 1;
  const size_t trace = first_block + tests * kTestLen, program = trace + 1;
  auto rel = [](size_t from, size_t to) { return static_cast<uint8_t>(to - from - 1); };

  std::vector<sock_filter> out(program);
  out[0] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArchOffset);
  out[1] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, rel(1, program));
  out[2] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNrOffset);
  out[no_match] = BPF_STMT(BPF_JMP | BPF_JA, static_cast<uint32_t>(program - no_match - 1));
  size_t at = first_block;
  for (size_t i = 0; i < n; ++i) {
    out[dispatch + i] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, checks[i].nr, rel(dispatch + i, at), 0);
    for (size_t a = 0; a < checks[i].args.size(); ++a, at += kTestLen) {
      const int arg = checks[i].args[a];
      const size_t miss = a + 1 < checks[i].args.size() ? at + kTestLen : program;
      out[at] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, argHigh(arg));
      out[at + 1] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, rel(at + 1, miss));
      out[at + 2] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, argLow(arg));
      out[at + 3] = BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, static_cast<uint32_t>(scratch::kGuardEnd),
                             rel(at + 3, miss), rel(at + 3, trace));
    }
  }
  out[trace] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | scratch::kGuardTraceData);
  return out;
}

}  // namespace

Result<std::vector<sock_filter>> traceFilterOf(const std::vector<sock_filter>& notify_program) {
  std::vector<sock_filter> out = scratchGuard();
  const size_t guard = out.size();
  out.insert(out.end(), notify_program.begin(), notify_program.end());
  for (size_t i = guard; i < out.size(); ++i) {
    sock_filter& insn = out[i];
    if (insn.code == (BPF_RET | BPF_K) && (insn.k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
      insn.k = SECCOMP_RET_TRACE;
  }
  if (out.size() > BPF_MAXINSNS) return Error{E2BIG, "the ptrace filter exceeds BPF_MAXINSNS"};
  return out;
}

}  // namespace sv::tracer
