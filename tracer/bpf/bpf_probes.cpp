// Real attempts at the BPF program and map types supervise uses (see
// bpf_probes.h).
#include "tracer/bpf/bpf_probes.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"
#include "tracer/cgroup.h"
#include "tracer/probe.h"

namespace sv::tracer {
namespace {

// The cgroup/connect_unix attach type (6.7), missing from the 6.1 headers.
constexpr bpf_attach_type kAttachUnixConnect = static_cast<bpf_attach_type>(49);

constexpr bpf_insn kReturnZero[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
};

// Loads `type` with a BTF attach target (tp_btf / lsm) and attaches it for an
// instant. Empty string on success, else which step failed and the errno.
}  // namespace

std::string loadAndAttachBtfProg(bpf_prog_type type, bpf_attach_type attach, const char *target,
                                 int btf_kind, const char *section) {
  btf *vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) return std::string("vmlinux BTF unavailable: ") + errnoText(errno);
  int id = btf__find_by_name_kind(vmlinux, target, btf_kind);
  btf__free(vmlinux);
  if (id < 0) return std::string("no BTF for ") + target;
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach,
              .attach_btf_id = static_cast<__u32>(id));
  UniqueFd prog(bpf_prog_load(type, "sv_probe", "GPL", kReturnZero, 2, &opts));
  if (!prog) return std::string("BPF_PROG_LOAD ") + section + ": " + errnoText(errno);
  // raw_tracepoint_open(NULL, fd) attaches both tp_btf and lsm programs,
  // also on kernels whose BPF_LINK_CREATE does not know them yet.
  UniqueFd link(bpf_raw_tracepoint_open(nullptr, prog.get()));
  if (!link) return std::string("attach ") + section + ": " + errnoText(errno);
  return "";
}

// raw_tp: load and attach to sched_process_exec (no BTF needed).
std::string loadAndAttachRawTp() {
  UniqueFd prog(
      bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "sv_probe", "GPL", kReturnZero, 2, nullptr));
  if (!prog) return "BPF_PROG_LOAD raw_tp: " + errnoText(errno);
  UniqueFd link(bpf_raw_tracepoint_open("sched_process_exec", prog.get()));
  if (!link) return "BPF_RAW_TRACEPOINT_OPEN sched_process_exec: " + errnoText(errno);
  return "";
}

bool lsmHookAllowsDPath(int lsm_hook_btf_id, std::string* detail) {
  // r1 = 0; r2 = r10 - 8; r3 = 8; call bpf_d_path; r0 = 0; exit
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10},
      {.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -8},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = 8},
      {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_d_path},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT},
  };
  char log[4096] = "";
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_LSM_MAC,
              .attach_btf_id = static_cast<__u32>(lsm_hook_btf_id), .log_level = 1,
              .log_size = sizeof log, .log_buf = log);
  // Loads nowhere: a null path is refused after the permission check.
  UniqueFd prog(bpf_prog_load(BPF_PROG_TYPE_LSM, "sv_probe", "GPL", insns,
                              sizeof insns / sizeof insns[0], &opts));
  const bool refused = std::strstr(log, "helper call is not allowed") != nullptr;
  if (refused && detail) *detail = "bpf_d_path: helper call is not allowed in this hook";
  return !refused;
}

std::string probeRingbuf() {
  UniqueFd rb(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sv_probe_rb", 0, 0,
                             static_cast<__u32>(::sysconf(_SC_PAGESIZE)), nullptr));
  if (!rb) return "BPF_MAP_CREATE ringbuf: " + errnoText(errno);
  return "";
}

bool probeCgroupUnixHooks(std::string* detail) {
  // r1 = r10 - 8; r2 = 8; r3 = 0; call bpf_probe_read_kernel; r0 = 1; exit
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_10},
      {.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_1, .imm = -8},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 8},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = 0},
      {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_probe_read_kernel},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1},
      {.code = BPF_JMP | BPF_EXIT},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = kAttachUnixConnect);
  UniqueFd prog(bpf_prog_load(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, "sv_probe_unix", "GPL", insns,
                              sizeof insns / sizeof insns[0], &opts));
  if (!prog) {
    if (detail)
      *detail = std::string("BPF_PROG_LOAD cgroup/connect_unix: ") + std::strerror(errno) +
                " (needs kernel 6.7+)";
    return false;
  }
  if (detail) *detail = "ok";
  return true;
}

Result<bool> probeCgroupSockAddr(std::string* detail) {
  auto parent = ownCgroupPath();
  if (!parent.ok()) return parent.error();
  auto cg = ScratchCgroup::create(*parent, "sv-probe");
  if (!cg.ok()) return cg.error();

  // r0 = 1 (allow); exit
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 1},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_CGROUP_INET4_CONNECT);
  UniqueFd prog(
      bpf_prog_load(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, "sv_probe_conn4", "GPL", insns, 2, &opts));
  if (!prog) {
    if (detail) *detail = std::string("BPF_PROG_LOAD cgroup/connect4: ") + std::strerror(errno);
    return false;
  }
  UniqueFd link(bpf_link_create(prog.get(), cg->fd(), BPF_CGROUP_INET4_CONNECT, nullptr));
  if (!link) {
    if (detail) *detail = std::string("BPF_LINK_CREATE cgroup/connect4: ") + std::strerror(errno);
    return false;
  }
  if (detail) *detail = "ok";
  return true;
}

}  // namespace sv::tracer
