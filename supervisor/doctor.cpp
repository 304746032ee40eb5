// Doctor probes, capability matrix and rendering (see doctor.h).
#include "supervisor/doctor.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"
#include "supervisor/policy_args.h"
#include "tracer/kernel_abi.h"
#include "tracer/landlock.h"
#include "tracer/net_filter.h"
#include "tracer/probe.h"

namespace sv::supervisor {
namespace {

using policy::NetworkMode;

// "EPERM (Operation not permitted)": the errno name is what an operator greps
// for.
std::string errnoText(int err) {
  const char *name = ::strerrorname_np(err);
  return std::string(name ? name : std::to_string(err).c_str()) + " (" + std::strerror(err) + ")";
}

// A small text file (procfs/securityfs), trailing newline removed.
Result<std::string> readSmallFile(const std::string &path) {
  std::ifstream in(path);
  if (!in) return errnoError("open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// securityfs is not mounted on every host. Mounting it on the host would
// change the operator's mount table, so a child mounts it in a private mount
// namespace, reads the file and reports through a pipe.
Result<std::string> readSecurityFile(const std::string &name) {
  const std::string path = "/sys/kernel/security/" + name;
  if (auto direct = readSmallFile(path)) return direct;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return errnoError("pipe");
  UniqueFd rd(p[0]), wr(p[1]);
  pid_t pid = ::fork();
  if (pid < 0) return errnoError("fork");
  if (pid == 0) {
    // Raw syscalls only: the parent may have threads.
    int err = 0;
    char buf[4096];
    ssize_t n = 0;
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("securityfs", "/sys/kernel/security", "securityfs", 0, nullptr) != 0) {
      err = errno;
    } else {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || (n = ::read(fd, buf, sizeof buf)) < 0) {
        err = errno;
        n = 0;
      }
    }
    if (::write(wr.get(), &err, sizeof err) != sizeof err) _exit(1);
    if (n > 0 && ::write(wr.get(), buf, static_cast<size_t>(n)) != n) _exit(1);
    _exit(0);
  }
  wr.reset();
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out.size() < sizeof(int)) return Error{0, "securityfs probe child died"};
  int err = 0;
  std::memcpy(&err, out.data(), sizeof err);
  if (err != 0) return Error{err, "read " + path + " (private securityfs mount)"};
  out.erase(0, sizeof err);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// ---- Landlock: one ruleset per right, so the list is what the kernel accepts
// ----

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

bool landlockAccepts(uint64_t fs, uint64_t net, uint64_t scoped) {
  tracer::abi::LandlockRulesetAttr attr{fs, net, scoped};
  long fd = ::syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (fd < 0) return false;
  ::close(static_cast<int>(fd));
  return true;
}

// ---- BPF ----

// libbpf prints its own warnings; a probe's refusal is reported by us instead.
int quietLibbpf(enum libbpf_print_level, const char *, va_list) { return 0; }

constexpr bpf_insn kReturnZero[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
};

// Loads `type` with a BTF attach target (tp_btf / lsm) and attaches it for an
// instant. Empty string on success, else which step failed and the errno.
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

// The LSM ids of include/uapi/linux/lsm.h.
const char *lsmName(uint64_t id) {
  switch (id) {
    case 100:
      return "capability";
    case 101:
      return "selinux";
    case 102:
      return "smack";
    case 103:
      return "tomoyo";
    case 104:
      return "apparmor";
    case 105:
      return "yama";
    case 106:
      return "loadpin";
    case 107:
      return "safesetid";
    case 108:
      return "lockdown";
    case 109:
      return "bpf";
    case 110:
      return "landlock";
    case 111:
      return "ima";
    case 112:
      return "evm";
    case 113:
      return "ipe";
    default:
      return nullptr;
  }
}

// Linux 6.8; new syscalls share one number on every architecture.
constexpr long kNrLsmListModules = 461;

// Active LSMs: lsm_list_modules(2) where the kernel has it, else securityfs.
Result<std::vector<std::string>> activeLsms(std::string *how) {
  uint64_t ids[64];
  uint32_t size = sizeof ids;
  long n = ::syscall(kNrLsmListModules, ids, &size, 0);
  if (n >= 0) {
    *how = "lsm_list_modules(2)";
    std::vector<std::string> out;
    for (long i = 0; i < n; ++i) {
      const char *name = lsmName(ids[i]);
      out.push_back(name ? name : "lsm#" + std::to_string(ids[i]));
    }
    return out;
  }
  auto text = readSecurityFile("lsm");
  if (!text) return text.error();
  *how = "/sys/kernel/security/lsm";
  std::vector<std::string> out;
  std::stringstream ss(*text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

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
    for (const char *what : {"cgroup_sock_addr", "ringbuf", "tracepoint", "bpf_lsm"})
      c.why[what] = tracer::kDisabledByTest;
    add(r, "bpf.cgroup_sock_addr", "BPF cgroup socket hooks", CheckState::Missing, "no",
        tracer::kDisabledByTest);
    add(r, "bpf.ringbuf", "BPF ring buffer", CheckState::Missing, "no", tracer::kDisabledByTest);
    add(r, "bpf.tracepoint", "BPF tracepoints", CheckState::Missing, "no", tracer::kDisabledByTest);
    add(r, "bpf.lsm_loadable", "BPF LSM program loads", CheckState::Missing, "no",
        tracer::kDisabledByTest);
    return;
  }
  libbpf_print_fn_t old = libbpf_set_print(quietLibbpf);

  std::string detail;
  auto sock = tracer::probeCgroupSockAddr(&detail);
  c.cgroup_sock_addr = sock.ok() && *sock;
  if (!sock.ok()) detail = "probe could not run: " + sock.error().message();
  if (!c.cgroup_sock_addr) c.why["cgroup_sock_addr"] = detail;
  add(r, "bpf.cgroup_sock_addr", "BPF cgroup socket hooks", okIf(c.cgroup_sock_addr),
      c.cgroup_sock_addr ? "yes" : "no",
      c.cgroup_sock_addr ? "cgroup/connect4 loaded and attached to a scratch cgroup" : detail);

  // A real ring buffer of one page, like the network filter's event channel.
  UniqueFd rb(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sv_probe_rb", 0, 0,
                             static_cast<__u32>(::sysconf(_SC_PAGESIZE)), nullptr));
  c.bpf_ringbuf = rb.valid();
  std::string rb_detail = c.bpf_ringbuf ? "BPF_MAP_CREATE ringbuf (one page)"
                                        : "BPF_MAP_CREATE ringbuf: " + errnoText(errno);
  if (!c.bpf_ringbuf) c.why["ringbuf"] = rb_detail;
  add(r, "bpf.ringbuf", "BPF ring buffer", okIf(c.bpf_ringbuf), c.bpf_ringbuf ? "yes" : "no",
      rb_detail);

  // Tracepoints: the classic type via libbpf's probe, then raw_tp and tp_btf
  // attached for real (tp_btf is what the exec re-check would use).
  int tp = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, nullptr);
  std::string raw = loadAndAttachRawTp();
  std::string btf =
      loadAndAttachBtfProg(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, "btf_trace_sched_process_exec",
                           BTF_KIND_TYPEDEF, "tp_btf/sched_process_exec");
  c.bpf_tracepoint = tp == 1 || raw.empty();
  std::string tp_detail = std::string("tracepoint: ") + (tp == 1 ? "ok" : "refused") +
                          "; raw_tp: " + (raw.empty() ? "ok" : raw) +
                          "; tp_btf: " + (btf.empty() ? "ok" : btf);
  if (!c.bpf_tracepoint) c.why["tracepoint"] = tp_detail;
  add(r, "bpf.tracepoint", "BPF tracepoints", okIf(c.bpf_tracepoint),
      c.bpf_tracepoint ? "yes" : "no", tp_detail);

  std::string lsm = loadAndAttachBtfProg(BPF_PROG_TYPE_LSM, BPF_LSM_MAC, "bpf_lsm_file_open",
                                         BTF_KIND_FUNC, "lsm/file_open");
  c.bpf_lsm_loadable = lsm.empty();
  if (!c.bpf_lsm_loadable) c.why["bpf_lsm"] = lsm;
  add(r, "bpf.lsm_loadable", "BPF LSM program loads", okIf(c.bpf_lsm_loadable),
      c.bpf_lsm_loadable ? "yes" : "no",
      c.bpf_lsm_loadable ? "lsm/file_open loaded and attached" : lsm);

  libbpf_set_print(old);
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
  c.landlock_abi = f.landlock_abi;
  c.cgroup2 = !f.cgroup2_mount.empty();
  c.cgroup_writable = f.cgroup_writable;
  c.cgroup_kill = f.cgroup_kill;
  std::string seccomp_why = note("seccomp-notify: ");
  if (!c.seccomp_notify || !c.notify_addfd)
    c.why["seccomp_notify"] = seccomp_why.empty() ? "unavailable" : seccomp_why;
  if (c.landlock_abi == 0) c.why["landlock"] = note("landlock: ");
  if (!c.cgroup_writable) c.why["cgroup"] = note("cgroup: ");

  add(r, "seccomp.user_notify", "seccomp user-notify", okIf(c.seccomp_notify),
      c.seccomp_notify ? "yes" : "no",
      c.seccomp_notify ? "filter with SECCOMP_FILTER_FLAG_NEW_LISTENER installed" : seccomp_why);
  add(r, "seccomp.addfd", "  SECCOMP_IOCTL_NOTIF_ADDFD", okIf(c.notify_addfd),
      c.notify_addfd ? "yes" : "no", "with SECCOMP_ADDFD_FLAG_SEND (fd injection)");
  add(r, "seccomp.sync_wake_up", "  SYNC_WAKE_UP", okIf(c.notify_sync_wakeup),
      c.notify_sync_wakeup ? "yes" : "no", "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (lower latency)");

  if (c.landlock_abi > 0) {
    for (const auto &b : kFsRights)
      if (landlockAccepts(b.bit, 0, 0)) r.landlock_fs_rights.push_back(b.name);
    for (const auto &b : kNetRights)
      if (landlockAccepts(0, b.bit, 0)) r.landlock_net_rights.push_back(b.name);
    for (const auto &b : kScopes)
      if (landlockAccepts(0, 0, b.bit)) r.landlock_scopes.push_back(b.name);
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

  add(r, "cgroup.v2", "cgroup v2 mount", okIf(c.cgroup2), c.cgroup2 ? f.cgroup2_mount : "no",
      c.cgroup2 ? "found in /proc/self/mountinfo" : c.why["cgroup"]);
  add(r, "cgroup.session", "  session cgroup", okIf(c.cgroup_writable),
      c.cgroup_writable ? "yes" : "no",
      c.cgroup_writable ? "created and removed a cgroup below ours" : c.why["cgroup"]);
  add(r, "cgroup.kill", "  cgroup.kill", okIf(c.cgroup_kill), c.cgroup_kill ? "yes" : "no",
      c.cgroup_kill ? "wrote cgroup.kill in a scratch cgroup"
                    : "tree kill falls back to SIGKILL per pid: " + note("cgroup: "));

  probeBpf(r);

  std::string how;
  auto lsms = activeLsms(&how);
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

  if (auto lock = readSecurityFile("lockdown")) {
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

  if (auto scope = readSmallFile("/proc/sys/kernel/yama/ptrace_scope")) {
    add(r, "ptrace_scope", "ptrace scope (Yama)", CheckState::Info, *scope,
        "0 classic, 1 descendants only, 2 CAP_SYS_PTRACE only, 3 disabled");
  } else {
    add(r, "ptrace_scope", "ptrace scope (Yama)", CheckState::Info, "n/a",
        "Yama not active: only the usual uid/capability checks apply");
  }

  uint64_t eff = 0;
  if (auto status = readSmallFile("/proc/self/status")) {
    std::stringstream ss(*status);
    for (std::string line; std::getline(ss, line);)
      if (line.starts_with("CapEff:")) eff = std::strtoull(line.c_str() + 7, nullptr, 16);
  }
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

// ---- matrix ----

namespace {

bool anyDenyGlobs(const policy::FilesystemRules &fs) {
  return !fs.deny_read.empty() || !fs.deny_write.empty();
}
bool anyExecRules(const policy::ExecRules &e) {
  return !e.allow.empty() || !e.deny.empty() || !e.switches.empty();
}

std::string why(const HostCaps &c, const std::string &key, const std::string &what) {
  auto it = c.why.find(key);
  return what + ": " + (it == c.why.end() || it->second.empty() ? "unavailable" : it->second);
}

}  // namespace

std::vector<FeatureRow> featureMatrix(const HostCaps &c, const policy::Policy &p) {
  const bool notify = c.seccomp_notify && c.notify_addfd;
  const bool landlock = c.landlock_abi > 0;
  // The network filter reports through a ring buffer: it can't load without
  // one.
  const bool net_bpf = c.cgroup_writable && c.cgroup_sock_addr && c.bpf_ringbuf;
  // `--backend auto` (the default) takes bpf-lsm where the BPF LSM is active
  // and its programs load (lsm_backend.h); the rows below then name it.
  const bool lsm = c.bpf_lsm_loadable && c.bpf_lsm_active;

  bool deny_globs = anyDenyGlobs(p.filesystem), exec_rules = anyExecRules(p.exec);
  for (const auto &[name, prof] : p.profiles) {
    deny_globs |= anyDenyGlobs(prof.filesystem);
    exec_rules |= anyExecRules(prof.exec);
  }
  const NetworkMode mode = p.network.mode.value_or(NetworkMode::All);

  std::vector<FeatureRow> rows;
  auto row = [&](std::string id, std::string label, bool used, bool ok, std::string backend,
                 std::string good, std::string bad) {
    rows.push_back({std::move(id), std::move(label), used, ok, ok ? std::move(backend) : "",
                    ok ? std::move(good) : std::move(bad)});
  };
  rows.push_back({"backend", "backend (--backend auto)", true, true, lsm ? "bpf-lsm" : "host",
                  lsm ? "files, exec and connect decided by BPF LSM programs in the kernel "
                        "(if every hook's program loads; else host); user-notify keeps link, "
                        "utimes and xattr calls"
                      : "Landlock + seccomp user-notify + cgroup-bpf, because " +
                            why(c, "bpf_lsm", "bpf-lsm")});
  // The session refuses to start without these, whatever the policy says.
  row("process_tree", "process tree containment", true, c.cgroup_writable, "cgroup",
      c.cgroup_kill ? "session cgroup, killed with cgroup.kill"
                    : "session cgroup, killed pid by pid (no cgroup.kill)",
      why(c, "cgroup", "session cgroup"));
  row("syscall_mediation", "syscall mediation", true, notify, "seccomp-notify",
      "write opens and execs decided in user space, fds injected with ADDFD",
      why(c, "seccomp_notify", "seccomp user-notify with ADDFD"));
  if (lsm) {
    // What bpf-lsm decides in the kernel, each with no round trip.
    row("file_roots", "file roots", true, true, "bpf-lsm",
        "read/write roots decided per open and path change by BPF LSM hooks", "");
    row("deny_globs", "deny globs", deny_globs, true, "bpf-lsm",
        "globs matched in the kernel against compiled tables, later files included", "");
    row("exec_rules", "exec rules", exec_rules, true, "bpf-lsm",
        "bprm_check_security decides the final binary", "");
    row("profiles", "profiles", !p.profiles.empty(), true, "bpf-lsm",
        "profile id in task storage, switched on exec, inherited on fork", "");
  } else {
    row("file_roots", "file roots", true, landlock, "landlock",
        "read/write roots in the kernel (ABI " + std::to_string(c.landlock_abi) + ")",
        why(c, "landlock", "Landlock"));
    row("deny_globs", "deny globs", deny_globs, notify && landlock, "seccomp-notify",
        "globs inside allowed roots decided per open; Landlock is the floor",
        !notify ? why(c, "seccomp_notify", "seccomp user-notify")
                : why(c, "landlock", "Landlock (the floor under raced decisions)"));
    row("exec_rules", "exec rules", exec_rules, notify && landlock, "seccomp-notify",
        "execve/execveat decided in user space; Landlock EXECUTE on the roots",
        !notify ? why(c, "seccomp_notify", "seccomp user-notify") : why(c, "landlock", "Landlock"));
    row("profiles", "profiles", !p.profiles.empty(), notify, "seccomp-notify",
        "profile switched on exec, tracked per process by the supervisor",
        why(c, "seccomp_notify", "seccomp user-notify"));
  }
  const std::string net_bad = !c.cgroup_writable ? why(c, "cgroup", "session cgroup")
                              : !c.cgroup_sock_addr
                                  ? why(c, "cgroup_sock_addr", "cgroup socket hooks")
                                  : why(c, "ringbuf", "BPF ring buffer");
  row("network.none", "network: none", mode == NetworkMode::None, net_bpf, "cgroup-bpf",
      "every socket connect/sendmsg refused in the kernel", net_bad);
  row("network.localhost", "network: localhost", mode == NetworkMode::Localhost, net_bpf,
      "cgroup-bpf", "loopback only, decided in the kernel", net_bad);
  row("network.allowlist", "network: allowlist", mode == NetworkMode::Allowlist, net_bpf,
      "cgroup-bpf", "LPM trie of CIDR:port, domains resolved at start", net_bad);
  rows.push_back({"network.all", "network: all", mode == NetworkMode::All, true, "none needed",
                  "no network filter is loaded"});
  const bool net_events = mode == NetworkMode::All || c.bpf_ringbuf;
  row("audit", "audit events", true, notify && net_events,
      mode == NetworkMode::All ? "seccomp-notify" : "seccomp-notify + cgroup-bpf",
      std::string(p.mode == policy::Mode::Audit ? "mode audit: would-deny recorded, nothing "
                                                  "enforced; "
                                                : "") +
          "file/exec decisions from the notify path" +
          (mode == NetworkMode::All ? "" : ", network decisions from the BPF ring buffer"),
      !notify ? why(c, "seccomp_notify", "seccomp user-notify")
              : why(c, "ringbuf", "BPF ring buffer"));
  return rows;
}

HostCaps sessionHostCaps(const SessionSetup &setup) {
  const tracer::HostFeatures &host = setup.host;
  HostCaps c;
  auto note = [&host](std::string_view prefix, const char *fallback) {
    for (const auto &n : host.notes)
      if (n.starts_with(prefix)) return n.substr(prefix.size());
    return std::string(fallback);
  };
  c.seccomp_notify = host.seccomp_notify && setup.seccomp_filter;
  // ADDFD|SEND is confirmed on the listener after launch; a session that
  // lacks it stops there (session.cpp), so one that runs has it.
  c.notify_addfd = host.notify_addfd;
  if (!c.seccomp_notify) c.why["seccomp_notify"] = note("seccomp-notify: ", "unavailable");
  c.landlock_abi = setup.landlock_ruleset ? host.landlock_abi : 0;
  if (!c.landlock_abi) c.why["landlock"] = note("landlock: ", "unavailable");
  c.cgroup2 = !host.cgroup2_mount.empty();
  c.cgroup_writable = setup.cgroup_dir_fd >= 0;
  if (!c.cgroup_writable)
    c.why["cgroup"] = setup.cgroup_error.empty() ? note("cgroup: ", "unavailable")
                                                 : setup.cgroup_error;
  // The session probe leaves cgroup_kill unknown; the session's cgroup has
  // the file or not (one faccessat).
  c.cgroup_kill = c.cgroup_writable &&
                  ::faccessat(setup.cgroup_dir_fd, "cgroup.kill", F_OK, 0) == 0;
  const std::string not_tried = "not tried: the policy needs no network filter";
  c.cgroup_sock_addr = setup.net_filter;
  c.bpf_ringbuf = setup.net_filter || setup.proc_tracker;
  if (!setup.net_filter) c.why["cgroup_sock_addr"] = setup.net_needed ? setup.net_error : not_tried;
  if (!c.bpf_ringbuf)
    c.why["ringbuf"] = setup.net_needed ? setup.net_error : "not tried in this session";
  c.bpf_tracepoint = setup.proc_tracker;
  c.bpf_lsm_active = c.bpf_lsm_loadable = setup.bpf_lsm;
  if (!setup.bpf_lsm)
    c.why["bpf_lsm"] = "not loaded in this session (`supervise doctor` probes it)";
  return c;
}

nlohmann::json featureRowsJson(const std::vector<FeatureRow> &rows) {
  nlohmann::json features = nlohmann::json::array();
  for (const auto &r : rows)
    features.push_back(
        {{"id", r.id},
         {"label", r.label},
         {"used", r.used},
         {"enforceable", r.enforceable},
         {"backend", r.backend.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.backend)},
         {"detail", r.detail}});
  return features;
}

bool fullyEnforceable(const std::vector<FeatureRow> &rows) {
  for (const auto &r : rows)
    if (r.used && !r.enforceable) return false;
  return true;
}

// ---- rendering ----

namespace {

const char *modeName(policy::Mode m) { return m == policy::Mode::Audit ? "audit" : "enforce"; }
const char *fallbackName(policy::Fallback f) {
  return f == policy::Fallback::UnsafeHostProcess ? "unsafe-host-process" : "fail-closed";
}
const char *networkName(NetworkMode m) {
  switch (m) {
    case NetworkMode::None:
      return "none";
    case NetworkMode::Localhost:
      return "localhost";
    case NetworkMode::Allowlist:
      return "allowlist";
    case NetworkMode::All:
      return "all";
  }
  return "all";
}

std::string policyLine(const PolicySummary &s) {
  std::string out = "preset " + s.preset;
  if (!s.file.empty()) out += " + " + s.file;
  return out + " (from " + s.source + ")";
}

void appendf(std::string &out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string &out, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

void appendRows(std::string &out, const std::vector<FeatureRow> &rows) {
  for (const auto &r : rows) {
    const char *mark = r.enforceable ? "ok" : (r.used ? "MISSING" : "missing");
    appendf(out, "  %-8s %-26s %-6s %-28s %s\n", mark, r.label.c_str(), r.used ? "used" : "-",
            r.backend.empty() ? "cannot be enforced" : r.backend.c_str(), r.detail.c_str());
  }
}

std::string verdictLine(const PolicySummary &s, const std::vector<FeatureRow> &rows) {
  if (fullyEnforceable(rows)) return "policy " + s.name + " is fully enforceable on this host\n";
  std::string out = "policy " + s.name + " is NOT fully enforceable on this host:";
  for (const auto &r : rows)
    if (r.used && !r.enforceable) out += "\n  " + r.label + ": " + r.detail;
  return out + "\n";
}

}  // namespace

nlohmann::json doctorJson(const HostReport &host, const PolicySummary &s, const policy::Policy &p,
                          const std::vector<FeatureRow> &rows) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto &c : host.checks)
    checks.push_back({{"id", c.id},
                      {"label", c.label.substr(c.label.find_first_not_of(' '))},
                      {"status", std::string(toString(c.state))},
                      {"value", c.value},
                      {"detail", c.detail}});
  const nlohmann::json features = featureRowsJson(rows);
  const HostCaps &c = host.caps;
  return {{"schema_version", 1},
          {"host",
           {{"seccomp_notify", c.seccomp_notify},
            {"notify_addfd", c.notify_addfd},
            {"notify_sync_wakeup", c.notify_sync_wakeup},
            {"landlock_abi", c.landlock_abi},
            {"landlock_fs_rights", host.landlock_fs_rights},
            {"landlock_net_rights", host.landlock_net_rights},
            {"landlock_scopes", host.landlock_scopes},
            {"cgroup2", c.cgroup2},
            {"cgroup_writable", c.cgroup_writable},
            {"cgroup_kill", c.cgroup_kill},
            {"cgroup_sock_addr", c.cgroup_sock_addr},
            {"bpf_ringbuf", c.bpf_ringbuf},
            {"bpf_tracepoint", c.bpf_tracepoint},
            {"bpf_lsm_active", c.bpf_lsm_active},
            {"bpf_lsm_loadable", c.bpf_lsm_loadable},
            {"lsms", host.lsms}}},
          {"checks", checks},
          {"policy",
           {{"name", s.name},
            {"preset", s.preset},
            {"file", s.file.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.file)},
            {"source", s.source},
            {"mode", modeName(p.mode)},
            {"fallback", fallbackName(p.fallback)},
            {"network", networkName(p.network.mode.value_or(NetworkMode::All))}}},
          {"features", features},
          {"fully_enforceable", fullyEnforceable(rows)}};
}

std::string doctorText(const HostReport &host, const PolicySummary &s,
                       const std::vector<FeatureRow> &rows) {
  std::string out = "host\n";
  for (const auto &c : host.checks) {
    appendf(out, "  %-8s %-28s %-24s %s\n", std::string(toString(c.state)).c_str(), c.label.c_str(),
            c.value.c_str(), c.detail.c_str());
  }
  out += "\npolicy: " + policyLine(s) + "\n";
  appendRows(out, rows);
  return out + "\n" + verdictLine(s, rows);
}

std::string statusText(const PolicySummary &s, const policy::Policy &p,
                       const std::vector<FeatureRow> &rows) {
  std::string out;
  appendf(out, "%-10s %s\n", "policy", s.name.c_str());
  appendf(out, "%-10s %s\n", "preset", s.preset.c_str());
  appendf(out, "%-10s %s\n", "file", s.file.empty() ? "(none)" : s.file.c_str());
  appendf(out,
          "%-10s %s (order: --policy, ./.supervise.json, "
          "$XDG_CONFIG_HOME/supervise/policy.json, /etc/supervise/policy.json, "
          "default preset)\n",
          "source", s.source.c_str());
  appendf(out, "%-10s %s\n", "workspace", p.workspace.c_str());
  appendf(out, "%-10s %s\n", "mode", modeName(p.mode));
  appendf(out, "%-10s %s\n", "fallback", fallbackName(p.fallback));
  appendf(out, "%-10s %s\n", "network", networkName(p.network.mode.value_or(NetworkMode::All)));
  out += "engines\n";
  appendRows(out, rows);
  return out + verdictLine(s, rows);
}

}  // namespace sv::supervisor
