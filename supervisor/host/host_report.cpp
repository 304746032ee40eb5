// The doctor's host report (see host_report.h).
#include "supervisor/host/host_report.h"

#include <linux/btf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "common/kernel_abi.h"
#include "common/proc_status.h"
#include "common/read_file.h"
#include "tracer/bpf/bpf_probes.h"
#include "tracer/bpf/libbpf_log.h"
#include "tracer/bpf/lsm_filter.h"
#include "tracer/cgroup.h"
#include "tracer/kernel_audit/audit_netlink.h"
#include "tracer/kernel_audit/audit_switch.h"
#include "tracer/landlock.h"
#include "tracer/mount_floor.h"
#include "tracer/mountinfo.h"
#include "tracer/probe.h"

namespace sv::supervisor {
namespace {

// ---- Landlock: one ruleset per right, so the list is what the kernel accepts ----

struct NamedBit {
  uint64_t bit;
  const char *name;
};

constexpr NamedBit kFsRights[] = {
    {tracer::abi::kFsExecute, "EXECUTE"},      {tracer::abi::kFsWriteFile, "WRITE_FILE"},
    {tracer::abi::kFsReadFile, "READ_FILE"},   {tracer::abi::kFsReadDir, "READ_DIR"},
    {tracer::abi::kFsRemoveDir, "REMOVE_DIR"}, {tracer::abi::kFsRemoveFile, "REMOVE_FILE"},
    {tracer::abi::kFsMakeChar, "MAKE_CHAR"},   {tracer::abi::kFsMakeDir, "MAKE_DIR"},
    {tracer::abi::kFsMakeReg, "MAKE_REG"},     {tracer::abi::kFsMakeSock, "MAKE_SOCK"},
    {tracer::abi::kFsMakeFifo, "MAKE_FIFO"},   {tracer::abi::kFsMakeBlock, "MAKE_BLOCK"},
    {tracer::abi::kFsMakeSym, "MAKE_SYM"},     {tracer::abi::kFsRefer, "REFER"},
    {tracer::abi::kFsTruncate, "TRUNCATE"},    {tracer::abi::kFsIoctlDev, "IOCTL_DEV"},
};
constexpr NamedBit kNetRights[] = {{1ULL << 0, "BIND_TCP"}, {1ULL << 1, "CONNECT_TCP"}};
constexpr NamedBit kScopes[] = {{tracer::abi::kScopeAbstractUnixSocket, "ABSTRACT_UNIX_SOCKET"},
                                {tracer::abi::kScopeSignal, "SIGNAL"}};

// Capability numbers worth naming for a supervisor (linux/capability.h).
constexpr std::pair<int, const char *> kNamedCaps[] = {
    {8, "CAP_SETPCAP"},    {12, "CAP_NET_ADMIN"}, {19, "CAP_SYS_PTRACE"},
    {21, "CAP_SYS_ADMIN"}, {38, "CAP_PERFMON"},   {39, "CAP_BPF"},
};

void add(HostReport &r, std::string id, std::string label, CheckState state, std::string value,
         std::string detail = "") {
  r.checks.push_back({std::move(id), std::move(label), state, std::move(value), std::move(detail)});
}

CheckState okIf(bool b) { return b ? CheckState::Ok : CheckState::Missing; }

std::string joined(const std::vector<std::string> &v, const char *sep = " ") {
  std::string out;
  for (const auto &s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

void probeBpf(HostReport &r) {
  HostCaps &c = r.caps;
  if (tracer::testDisabled("bpf")) {
    for (const char *what : {"cgroup_sock_addr", "cgroup_unix", "ringbuf", "tracepoint", "bpf_lsm"})
      c.why[what] = tracer::kDisabledByTest;
    add(r, "bpf.cgroup_sock_addr", "BPF cgroup socket hooks", CheckState::Missing, "no",
        tracer::kDisabledByTest);
    add(r, "bpf.cgroup_unix", "  unix socket hooks", CheckState::Info, "no",
        tracer::kDisabledByTest);
    add(r, "bpf.ringbuf", "BPF ring buffer", CheckState::Missing, "no", tracer::kDisabledByTest);
    add(r, "bpf.tracepoint", "BPF tracepoints", CheckState::Missing, "no", tracer::kDisabledByTest);
    add(r, "bpf.lsm_loadable", "BPF LSM program loads", CheckState::Missing, "no",
        tracer::kDisabledByTest);
    c.why["bpf_lsm_path_hooks"] = tracer::kDisabledByTest;
    add(r, "bpf.lsm_path_hooks", "  path_* hooks load", CheckState::Info, "n/a",
        tracer::kDisabledByTest);
    return;
  }
  // libbpf prints its own warnings; a probe's refusal is reported by us instead.
  std::string discarded;
  tracer::ScopedLibbpfLog quiet(&discarded);

  std::string detail;
  auto sock = tracer::probeCgroupSockAddr(&detail);
  c.cgroup_sock_addr = sock.ok() && *sock;
  if (!sock.ok()) detail = "probe could not run: " + sock.error().message();
  if (!c.cgroup_sock_addr) c.why["cgroup_sock_addr"] = detail;
  add(r, "bpf.cgroup_sock_addr", "BPF cgroup socket hooks", okIf(c.cgroup_sock_addr),
      c.cgroup_sock_addr ? "yes" : "no",
      c.cgroup_sock_addr ? "cgroup/connect4 loaded and attached to a scratch cgroup" : detail);

  // Pathname unix sockets are judged by cgroup/connect_unix and
  // sendmsg_unix (kernel 6.7+); without them such sockets are not judged on
  // the host backend (docs/network.md).
  std::string unix_detail;
  c.cgroup_unix_hooks = tracer::probeCgroupUnixHooks(&unix_detail);
  if (!c.cgroup_unix_hooks) c.why["cgroup_unix"] = unix_detail;
  add(r, "bpf.cgroup_unix", "  unix socket hooks", c.cgroup_unix_hooks ? CheckState::Ok : CheckState::Info,
      c.cgroup_unix_hooks ? "yes" : "no",
      c.cgroup_unix_hooks ? "cgroup/connect_unix loaded: pathname unix sockets are judged"
                          : "pathname unix sockets are not judged on the host backend: " +
                                unix_detail);

  // A real ring buffer of one page, like the network filter's event channel.
  const std::string rb_error = tracer::probeRingbuf();
  c.bpf_ringbuf = rb_error.empty();
  std::string rb_detail = c.bpf_ringbuf ? "BPF_MAP_CREATE ringbuf (one page)" : rb_error;
  if (!c.bpf_ringbuf) c.why["ringbuf"] = rb_detail;
  add(r, "bpf.ringbuf", "BPF ring buffer", okIf(c.bpf_ringbuf), c.bpf_ringbuf ? "yes" : "no",
      rb_detail);

  // Tracepoints: the classic type via libbpf's probe, then raw_tp and tp_btf
  // attached for real (tp_btf is what the exec re-check would use).
  int tp = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, nullptr);
  std::string raw = tracer::loadAndAttachRawTp();
  std::string btf =
      tracer::loadAndAttachBtfProg(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, "btf_trace_sched_process_exec",
                           BTF_KIND_TYPEDEF, "tp_btf/sched_process_exec");
  c.bpf_tracepoint = tp == 1 || raw.empty();
  std::string tp_detail = std::string("tracepoint: ") + (tp == 1 ? "ok" : "refused") +
                          "; raw_tp: " + (raw.empty() ? "ok" : raw) +
                          "; tp_btf: " + (btf.empty() ? "ok" : btf);
  if (!c.bpf_tracepoint) c.why["tracepoint"] = tp_detail;
  add(r, "bpf.tracepoint", "BPF tracepoints", okIf(c.bpf_tracepoint),
      c.bpf_tracepoint ? "yes" : "no", tp_detail);

  std::string lsm = tracer::loadAndAttachBtfProg(BPF_PROG_TYPE_LSM, BPF_LSM_MAC, "bpf_lsm_file_open",
                                         BTF_KIND_FUNC, "lsm/file_open");
  c.bpf_lsm_loadable = lsm.empty();
  if (!c.bpf_lsm_loadable) c.why["bpf_lsm"] = lsm;
  add(r, "bpf.lsm_loadable", "BPF LSM program loads", okIf(c.bpf_lsm_loadable),
      c.bpf_lsm_loadable ? "yes" : "no",
      c.bpf_lsm_loadable ? "lsm/file_open loaded and attached" : lsm);

  // Which path_* hooks a session's LsmFilter would load: it asks the same
  // (tracer::probeLsmHooks), and without every one of them a bpf-lsm
  // session leaves write opens and path changes on user-notify.
  if (!c.bpf_lsm_loadable) {
    c.why["bpf_lsm_path_hooks"] = "no LSM program loads";
    add(r, "bpf.lsm_path_hooks", "  path_* hooks load", CheckState::Info, "n/a",
        "no LSM program loads here");
    return;
  }
  std::vector<tracer::LsmHookMissing> missing;
  auto hooks = tracer::probeLsmHooks(&missing);
  c.bpf_lsm_path_hooks = hooks && tracer::hasEveryLsmPathHook(*hooks);
  const std::string hooks_detail =
      hooks ? tracer::describeMissingPathHooks(missing) : hooks.error().message();
  if (!c.bpf_lsm_path_hooks) c.why["bpf_lsm_path_hooks"] = hooks_detail;
  add(r, "bpf.lsm_path_hooks", "  path_* hooks load", okIf(c.bpf_lsm_path_hooks),
      c.bpf_lsm_path_hooks ? "yes" : "no",
      c.bpf_lsm_path_hooks
          ? "bpf_d_path allowed in every path_* hook, bpf_path_d_path kfunc present: write opens "
            "and path changes decided in the kernel under bpf-lsm"
          : hooks_detail + "; so under bpf-lsm, write opens and path changes stay on user-notify");
}

// Kernel audit, where the kernel's own denials come from. Doctor only asks
// (AUDIT_GET, a join of the read-only group); the one change it makes is to
// restore what a supervise session that died left turned on.
void probeKernelAudit(HostReport &r) {
  namespace ka = tracer::kernel_audit;
  HostCaps &c = r.caps;
  if (tracer::testDisabled("kernel-audit")) {
    c.why["kernel_audit"] = tracer::kDisabledByTest;
    add(r, "audit.kernel", "kernel audit", CheckState::Missing, "no", tracer::kDisabledByTest);
    return;
  }
  std::string restored;
  if (auto stale = ka::AuditSwitch::recoverStale(); stale && *stale)
    restored = std::string("; restored what a dead session left: ") +
               ka::auditRestoreActionName(**stale);
  auto control = ka::AuditControl::open();
  auto status = control ? control->getStatus() : Result<ka::AuditStatus>(control.error());
  auto listener = ka::AuditListener::open(1 << 16);
  std::string detail;
  if (!status) {
    detail = "AUDIT_GET: " + status.error().message() + " (needs CAP_AUDIT_CONTROL)";
  } else if (!listener) {
    detail = "read-only multicast group: " + listener.error().message() +
             " (needs CAP_AUDIT_READ)";
  } else {
    c.kernel_audit = true;
    detail = status->enabled == 0
                 ? "off: each session turns it on (enabled=1, backlog_limit raised) and the last "
                   "one restores it; with no auditd the kernel also prints records to its log, "
                   "rate-limited"
             : status->pid != 0 ? "on, auditd pid " + std::to_string(status->pid) +
                                      ": sessions only read the multicast group"
                                : "on (no auditd): sessions only read the multicast group";
    c.kernel_audit_detail = detail;
  }
  if (!c.kernel_audit) c.why["kernel_audit"] = detail;
  add(r, "audit.kernel", "kernel audit", okIf(c.kernel_audit),
      !status ? "unknown" : status->enabled == 0 ? "off" : status->enabled == 2 ? "locked on" : "on",
      detail + restored);
}

}  // namespace

std::string_view toString(CheckState s) {
  switch (s) {
    case CheckState::Ok:
      return "ok";
    case CheckState::Missing:
      return "missing";
    case CheckState::Info:
      return "info";
  }
  return "info";
}

HostReport probeDoctorHost() {
  HostReport r;
  HostCaps &c = r.caps;

  if (struct utsname u{}; ::uname(&u) == 0) {
    add(r, "kernel", "kernel", CheckState::Info,
        std::string(u.sysname) + " " + u.release + " " + u.machine, u.version);
  }

  // A session mounts cgroup2 where its mount namespace has none
  // (tracer/cgroup.h). Doctor probes what that session would find, on a mount
  // in a private mount namespace of its own: the host's mount table stays as
  // it was. (Where even the namespace is refused, so is the mount.)
  const bool private_cgroup2 = !tracer::testDisabled("cgroup") && !tracer::cgroup2Listed() &&
                               tracer::enterPrivateMountNamespace().ok();

  // seccomp, Landlock, cgroup: the same probes the session runs.
  tracer::HostFeatures f = tracer::probeHost();
  auto note = [&f](std::string_view prefix) {
    for (const auto &n : f.notes)
      if (n.starts_with(prefix)) return n.substr(prefix.size());
    return std::string();
  };
  c.seccomp_notify = f.seccomp_notify;
  c.notify_addfd = f.notify_addfd;
  c.notify_sync_wakeup = f.notify_sync_wakeup;
  c.seccomp_trace = f.seccomp_trace;
  if (!c.seccomp_trace) c.why["ptrace"] = note("ptrace: ");
  c.landlock_abi = f.landlock_abi;
  setCgroup2(c, f, private_cgroup2);
  c.cgroup_writable = f.cgroup_writable;
  c.cgroup_kill = f.cgroup_kill;
  std::string seccomp_why = note("seccomp-notify: ");
  if (!c.seccomp_notify || !c.notify_addfd)
    c.why["seccomp_notify"] = seccomp_why.empty() ? "unavailable" : seccomp_why;
  if (c.landlock_abi == 0) c.why["landlock"] = note("landlock: ");
  std::string mount_floor_why;
  c.mount_floor = tracer::mountFloorAvailable(&mount_floor_why);
  if (!c.mount_floor) c.why["mountns"] = mount_floor_why;
  if (!c.cgroup_writable) c.why["cgroup"] = note("cgroup: ");

  add(r, "seccomp.user_notify", "seccomp user-notify", okIf(c.seccomp_notify),
      c.seccomp_notify ? "yes" : "no",
      c.seccomp_notify ? "filter with SECCOMP_FILTER_FLAG_NEW_LISTENER installed" : seccomp_why);
  add(r, "seccomp.addfd", "  SECCOMP_IOCTL_NOTIF_ADDFD", okIf(c.notify_addfd),
      c.notify_addfd ? "yes" : "no", "with SECCOMP_ADDFD_FLAG_SEND (fd injection)");
  add(r, "seccomp.sync_wake_up", "  SYNC_WAKE_UP", okIf(c.notify_sync_wakeup),
      c.notify_sync_wakeup ? "yes" : "no", "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (lower latency)");
  // The fallback where user-notify is missing (--backend ptrace).
  add(r, "seccomp.ptrace", "seccomp with ptrace", c.seccomp_trace ? CheckState::Ok : CheckState::Info,
      c.seccomp_trace ? "yes" : "no",
      c.seccomp_trace ? "SECCOMP_RET_TRACE available: the ptrace backend can run here "
                        "(--backend ptrace; auto takes it where user-notify is missing)"
                      : c.why["ptrace"]);

  if (c.landlock_abi > 0) {
    for (const auto &b : kFsRights)
      if (tracer::landlockAccepts(b.bit, 0, 0)) r.landlock_fs_rights.push_back(b.name);
    for (const auto &b : kNetRights)
      if (tracer::landlockAccepts(0, b.bit, 0)) r.landlock_net_rights.push_back(b.name);
    for (const auto &b : kScopes)
      if (tracer::landlockAccepts(0, 0, b.bit)) r.landlock_scopes.push_back(b.name);
  }
  add(r, "landlock.abi", "Landlock", okIf(c.landlock_abi > 0),
      c.landlock_abi > 0 ? "ABI " + std::to_string(c.landlock_abi) : "no",
      c.landlock_abi > 0 ? "ruleset created" : c.why["landlock"]);
  if (c.landlock_abi > 0) {
    add(r, "landlock.fs_rights", "  filesystem rights", CheckState::Info,
        std::to_string(r.landlock_fs_rights.size()), joined(r.landlock_fs_rights));
    add(r, "landlock.net_rights", "  network rights", CheckState::Info,
        std::to_string(r.landlock_net_rights.size()),
        joined(r.landlock_net_rights) +
            (r.landlock_net_rights.empty() ? "" : " (unused: cgroup-bpf decides)"));
    add(r, "landlock.scopes", "  scopes", CheckState::Info,
        std::to_string(r.landlock_scopes.size()), joined(r.landlock_scopes));
  }

  // Which floor a session gets under its decisions (file roots).
  add(r, "floor", "filesystem floor", okIf(c.landlock_abi > 0 || c.mount_floor),
      c.landlock_abi > 0 ? "landlock" : c.mount_floor ? "mount namespace" : "none",
      c.landlock_abi > 0 ? "Landlock ruleset (a private mount namespace where Landlock is missing)"
      : c.mount_floor    ? "Landlock missing: the roots are enforced by a private mount namespace "
                           "(read-only binds, writable roots read-write, the rest absent)"
                         : c.why["landlock"] + "; mount namespace: " + mount_floor_why);
  add(r, "cgroup.v2", "cgroup v2 mount", okIf(c.cgroup2), c.cgroup2 ? f.cgroup2_mount : "no",
      !c.cgroup2                ? c.why["cgroup"]
      : c.cgroup2_by_supervise ? c.cgroup2_note
                               : "found in /proc/self/mountinfo");
  add(r, "cgroup.session", "  session cgroup", okIf(c.cgroup_writable),
      c.cgroup_writable ? "yes" : "no",
      c.cgroup_writable ? "created and removed a cgroup below ours" : c.why["cgroup"]);
  add(r, "cgroup.kill", "  cgroup.kill", okIf(c.cgroup_kill), c.cgroup_kill ? "yes" : "no",
      c.cgroup_kill ? "wrote cgroup.kill in a scratch cgroup"
                    : "tree kill falls back to SIGKILL per pid: " + note("cgroup: "));

  probeBpf(r);
  probeKernelAudit(r);

  std::string how;
  auto lsms = tracer::activeLsms(&how);
  if (lsms) {
    r.lsms = *lsms;
    for (const auto &l : r.lsms) c.bpf_lsm_active |= l == "bpf";
  }
  add(r, "lsm.active", "active LSMs", CheckState::Info, lsms ? joined(r.lsms, ",") : "unknown",
      lsms ? "from " + how : lsms.error().message());
  if (!c.bpf_lsm_active) {
    c.why["bpf_lsm"] = (c.why.count("bpf_lsm") ? c.why["bpf_lsm"] + "; " : "") +
                       "\"bpf\" not in the active LSM list (boot with lsm=...,bpf)";
  }
  add(r, "lsm.bpf_active", "BPF LSM active", okIf(c.bpf_lsm_active),
      c.bpf_lsm_active ? "yes" : "no",
      c.bpf_lsm_active ? "\"bpf\" in the active LSM list" : "not in the lsm= boot list");

  if (auto lock = tracer::readSecurityFile("lockdown")) {
    // "[none] integrity confidentiality": the bracketed word is the mode.
    std::string mode = *lock;
    if (auto a = lock->find('['), b = lock->find(']'); a != std::string::npos && b > a)
      mode = lock->substr(a + 1, b - a - 1);
    add(r, "lockdown", "lockdown mode", CheckState::Info, mode,
        mode == "none"        ? "no lockdown restrictions"
        : mode == "integrity" ? "kernel writes blocked (bpf_probe_write_user refused)"
                              : "kernel memory reads blocked too (bpf_probe_read_kernel "
                                "refused)");
  } else {
    add(r, "lockdown", "lockdown mode", CheckState::Info, "n/a",
        "lockdown LSM not active: " + lock.error().message());
  }

  if (auto scope = readWholeFile("/proc/sys/kernel/yama/ptrace_scope")) {
    while (!scope->empty() && (scope->back() == '\n' || scope->back() == ' ')) scope->pop_back();
    add(r, "ptrace_scope", "ptrace scope (Yama)", CheckState::Info, *scope,
        "0 classic, 1 descendants only, 2 CAP_SYS_PTRACE only, 3 disabled");
  } else {
    add(r, "ptrace_scope", "ptrace scope (Yama)", CheckState::Info, "n/a",
        "Yama not active: only the usual uid/capability checks apply");
  }

  uint64_t eff = 0;
  if (auto status = readWholeFile("/proc/self/status"))
    eff = procStatusNumber<uint64_t>(*status, "CapEff", 0, 16).value_or(0);
  std::vector<std::string> have, lack;
  for (const auto &[bit, name] : kNamedCaps) (eff >> bit & 1 ? have : lack).push_back(name);
  add(r, "privileges.euid", "effective uid", CheckState::Info, std::to_string(::geteuid()),
      ::geteuid() == 0 ? "root" : "not root: cgroup and BPF probes need privileges");
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(eff));
  add(r, "privileges.capabilities", "capabilities", CheckState::Info, hex,
      "have: " + (have.empty() ? std::string("none") : joined(have)) +
          (lack.empty() ? "" : "; lack: " + joined(lack)));
  return r;
}

}  // namespace sv::supervisor
