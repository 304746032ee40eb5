// lsm_bench: the cost of the BPF-LSM backend, measured in the same VM and
// the same run as the native baseline (tools/vm/run --icount; numbers in
// docs/bpf-lsm.md). Each workload runs in a forked child in a scratch
// cgroup: once in a cgroup no filter judges (native), then in the session
// cgroup with every decision reported, then with denials only reported.
// Then find and tar once more through the real binary: `supervise --backend
// bpf-lsm` (audit.level decisions: every decision recorded; then
// audit.level=deny) vs the same helper run natively.
//
// usage (in the guest): lsm_bench [ITERATIONS]
// Prints one line per workload: native ns/op, bpf-lsm ns/op (all events),
// bpf-lsm ns/op (deny events only) and the ratios. `lsm_bench --time` (run
// in the workspace) is the helper: it times find and tar and prints
// "find NS" and "tar NS".
//
// No timed region may reach the guest's root, a virtiofs share (cache=none):
// each walk from / there costs FUSE round trips to the host, host time that
// would swamp what is measured here and, under --icount, break determinism.
// So the bench runs chrooted in a tmpfs copy of the layout (enterLocalRoot)
// with paths relative to the workspace.
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "policy/compile.h"
#include "policy/load.h"
#include "common/kernel_abi.h"
#include "tracer/bpf/lsm_filter.h"
#include "tracer/seccomp/seccomp_programs.h"
#include "tracer/bpf/net_filter.h"
#include "tracer/cgroup.h"

namespace fs = std::filesystem;
using namespace sv;

namespace {

// Once to warm up, then timed, best of three: ns of one run of body.
double bestOfThree(const std::function<void()>& body) {
  body();
  double best = 1e300;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  return best;
}

// Unmaps what this process has mapped of BPF maps (the filter's ring
// buffer). Every timed child is a fork of this process, and each fork it
// makes copies the page tables of such a mapping (~60,000-230,000
// instructions per fork+exec here, with how much of the ring buffer was
// touched): the bench's cost, not the LSM's (a supervised command never
// has that mapping).
void unmapBpfMaps() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("anon_inode:bpf") == std::string::npos) continue;
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) ranges.emplace_back(lo, hi);
  }
  for (auto [lo, hi] : ranges) munmap(reinterpret_cast<void*>(lo), hi - lo);
}

// bestOfThree(body) in a child inside cgroup `cg`: without the fork and join.
double timed(const tracer::ScratchCgroup& cg, const std::function<void()>& body) {
  auto* best = static_cast<double*>(
      mmap(nullptr, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  pid_t pid = fork();
  if (pid == 0) {
    if (!cg.addProcess(0).ok()) _exit(120);
    unmapBpfMaps();
    *best = bestOfThree(body);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::fprintf(stderr, "workload failed\n");
  double ns = *best;
  munmap(best, sizeof(double));
  return ns;
}

// Runs a static busybox applet copied into the workspace (scratch tmpfs):
// an exec from the virtiofs share costs over a second under TCG and would
// drown the difference being measured. Output goes to /dev/null, opened
// once (see the top of the file).
int g_devnull = -1;
double g_children_cpu_ns = 0;
void busybox(std::vector<std::string> args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string bin = "./busybox";
    std::vector<char*> argv{bin.data()};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    dup2(g_devnull, 1);
    dup2(g_devnull, 2);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  g_children_cpu_ns += (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
                       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

// The best of three of the busybox children's own CPU time in `body`
// (wait4: the scheduler's exact run time, to the microsecond). Unlike the
// guest clock it leaves out whatever else ran on the one vCPU meanwhile,
// such as supervise handling the command's fork, exec and exit events.
double bestCpuOfThree(const std::function<void()>& body) {
  body();
  double best = 1e300;
  for (int r = 0; r < 3; ++r) {
    const double before = g_children_cpu_ns;
    body();
    best = std::min(best, g_children_cpu_ns - before);
  }
  return best;
}

void find() { busybox({"find", "tree"}); }
void tar() { busybox({"tar", "cf", "-", "tree"}); }

// A private mount namespace whose / is a tmpfs with the same layout: bind
// mounts of /usr, /work, /dev, /proc, /sys and the workspace, copies of the
// /etc files busybox tar (user and group names) and the dynamic loader read.
// Paths stay the same strings, so the policy judges them as outside. /work
// holds the build tree (SV_SUPERVISE_BIN) in this project's layout.
bool enterLocalRoot(const std::string& ws) {
  const std::string root = ws + "-root";
  fs::create_directories(root);
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("tmpfs", root.c_str(), "tmpfs", 0, "size=64m") != 0)
    return false;
  for (std::string d : {"/usr", "/work", "/dev", "/proc", "/sys", ws.c_str()}) {
    fs::create_directories(root + d);
    if (mount(d.c_str(), (root + d).c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) return false;
  }
  for (std::string l : {"/bin", "/sbin", "/lib", "/lib64"})  // merged /usr
    if (fs::is_symlink(l)) fs::create_symlink(fs::read_symlink(l), root + l);
  for (const char* d : {"/etc", "/tmp", "/root"}) fs::create_directories(root + d);
  for (const char* f : {"/etc/passwd", "/etc/group", "/etc/ld.so.cache", "/etc/nsswitch.conf"})
    fs::copy_file(f, root + f);
  return chroot(root.c_str()) == 0 && chdir(ws.c_str()) == 0;
}

struct Helper {
  double find = 0, tar = 0;
  double cpu_find = 0, cpu_tar = 0;  // the commands' own CPU time
  size_t audit_lines = 0;
};

// Runs argv (the helper, directly or under supervise) in the workspace and
// parses its "find NS" / "tar NS" lines.
// Runs argv (in `cg` when given), reads its find/tar times and counts the
// audit file's lines.
Helper runHelper(std::vector<std::string> argv, const std::string& audit,
                 const tracer::ScratchCgroup* cg = nullptr) {
  int out[2];
  if (pipe(out) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    if (cg && !cg->addProcess(0).ok()) _exit(120);
    dup2(out[1], 1);
    close(out[0]);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[256];
  for (ssize_t k; (k = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, k);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::fprintf(stderr, "%s failed (status %d): %s\n", argv[0].c_str(), status, text.c_str());
  Helper h;
  std::sscanf(text.c_str(), "find %lf tar %lf cpufind %lf cputar %lf", &h.find, &h.tar, &h.cpu_find,
              &h.cpu_tar);
  std::ifstream lines(audit);
  for (std::string l; std::getline(lines, l);) ++h.audit_lines;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  g_devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (argc > 1 && std::string(argv[1]) == "--time") {  // the helper, in the workspace
    if (argc > 2 && std::string(argv[2]) == "--landlock") {
      // What supervise's Landlock domain under bpf-lsm costs: scopes only
      // (abstract unix sockets, signals), no file access handled.
      tracer::abi::LandlockRulesetAttr attr{};
      attr.scoped = tracer::abi::kScopeAbstractUnixSocket | tracer::abi::kScopeSignal;
      int fd = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));
      if (fd < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          syscall(SYS_landlock_restrict_self, fd, 0) != 0)
        return 1;
    }
    if (argc > 2 && std::string(argv[2]) == "--seccomp-sv") {
      // supervise's own filter under bpf-lsm (what lsmSeccompPlan keeps for
      // code-sandbox), with no listener: nothing find or tar calls is notified.
      policy::SeccompPlan plan;
      plan.notify_write_opens = plan.notify_read_opens = plan.notify_exec = false;
      plan.notify_links_renames_and_attrs = true;
      std::vector<sock_filter> insns = tracer::prebuiltSeccompFilter(plan);
      sock_fprog prog{static_cast<unsigned short>(insns.size()), insns.data()};
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return 1;
    }
    if (argc > 2 && std::string(argv[2]) == "--seccomp") {
      // What any seccomp filter costs: one that allows everything (the
      // kernel's action cache answers every syscall; what is left is the
      // syscall entry's slow path a filter switches on).
      sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
      sock_fprog prog{1, &allow};
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return 1;
    }
    std::printf("find %.0f\n", bestOfThree(find));
    std::printf("tar %.0f\n", bestOfThree(tar));
    std::printf("cpufind %.0f\n", bestCpuOfThree(find));
    std::printf("cputar %.0f\n", bestCpuOfThree(tar));
    return 0;
  }
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  const char* scratch = std::getenv("SV_SCRATCH_DIR");
  std::string ws = std::string(scratch && *scratch ? scratch : "/srv") + "/sv-lsm-bench";
  fs::remove_all(ws);
  fs::create_directories(ws + "/tree");
  for (int d = 0; d < 50; ++d) {  // a source-tree-like workload for find and tar
    std::string dir = ws + "/tree/d" + std::to_string(d) + "/sub";
    fs::create_directories(dir);
    for (int f = 0; f < 40; ++f) std::ofstream(dir + "/f" + std::to_string(f) + ".c") << "int x;\n";
  }
  std::ofstream(ws + "/file.txt") << "x";
  fs::copy_file("/bin/busybox", ws + "/busybox");
  fs::permissions(ws + "/busybox", fs::perms::owner_all);
  // The helper in the workspace: the build tree may be outside the exec roots.
  fs::copy_file("/proc/self/exe", ws + "/lsm_bench");
  if (!enterLocalRoot(ws)) {
    std::perror("local root");
    return 1;
  }
  // Loopback port 1: nothing listens, so connect fails fast with
  // ECONNREFUSED after the LSM hook has judged it (a listener's backlog
  // would fill and block).
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(1);

  policy::LoadRequest req;
  req.preset = "code-sandbox";
  req.workspace = ws;
  req.home = "/root";
  auto loaded = policy::load(req);
  if (!loaded.ok()) return 1;
  auto plan = policy::compileLsm(*loaded.policy, policy::compile(*loaded.policy));
  auto parent = tracer::ownCgroupPath();
  if (!parent.ok()) return 1;
  auto native_cg = tracer::ScratchCgroup::create(*parent, "sv-bench-native");
  auto session_cg = tracer::ScratchCgroup::create(*parent, "sv-bench-session");
  if (!native_cg.ok() || !session_cg.ok()) return 1;
  auto id = tracer::cgroupIdOf(session_cg->path());

  struct Workload {
    const char* name;
    int ops;
    std::function<void()> body;
  };
  const char* file = "file.txt";
  std::vector<Workload> work = {
      {"open+close (read, allowed)", n,
       [&] {
         for (int i = 0; i < n; ++i) close(open(file, O_RDONLY));
       }},
      {"open+close (write, allowed)", n,
       [&] {
         for (int i = 0; i < n; ++i) close(open(file, O_WRONLY));
       }},
      {"open (write .env, denied)", n,
       [&] {
         for (int i = 0; i < n; ++i) close(open(".env", O_WRONLY | O_CREAT, 0644));
       }},
      {"fork+exec (static busybox true)", n / 10,
       [&] {
         for (int i = 0; i < n / 10; ++i) busybox({"true"});
       }},
      {"connect loopback (refused)", n,
       [&] {
         for (int i = 0; i < n; ++i) {
           int fd = socket(AF_INET, SOCK_STREAM, 0);
           connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
           close(fd);
         }
       }},
      {"find tree (2000 files)", 1, find},
      {"tar tree (2000 files)", 1, tar},
  };

  std::vector<double> native(work.size()), all(work.size()), deny(work.size());
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  for (size_t i = 0; i < work.size(); ++i) {
    std::fprintf(stderr, "native: %s\n", work[i].name);
    native[i] = timed(*native_cg, work[i].body);
  }
  for (int pass = 0; pass < 2; ++pass) {
    tracer::LsmFilterOptions opt;
    opt.deny_events_only = pass == 1;
    auto f = tracer::LsmFilter::load(plan, *id, opt);
    if (!f.ok()) {
      std::fprintf(stderr, "%s\n", f.error().message().c_str());
      return 1;
    }
    size_t events = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      // Drain between workloads, as the supervisor's loop would.
      std::fprintf(stderr, "bpf-lsm pass %d: %s\n", pass, work[i].name);
      (pass == 0 ? all : deny)[i] = timed(*session_cg, work[i].body);
      f->consume([&](const tracer::LsmEvent&) { ++events; });
    }
    std::printf("# pass %s: %zu events, %llu dropped\n", pass == 0 ? "all-events" : "deny-only",
                events, static_cast<unsigned long long>(f->droppedEvents()));
  }
  std::printf("%-30s %12s %12s %12s %8s %8s\n", "workload", "native ns/op", "lsm-all", "lsm-deny",
              "x all", "x deny");
  for (size_t i = 0; i < work.size(); ++i) {
    double k = work[i].ops;
    std::printf("%-30s %12.0f %12.0f %12.0f %8.3f %8.3f\n", work[i].name, native[i] / k, all[i] / k,
                deny[i] / k, all[i] / native[i], deny[i] / native[i]);
  }

  // The real binary: one session per audit level, each timing find and tar
  // in its command (the session's start-up and LSM load are not timed).
  const std::string helper = ws + "/lsm_bench", audit = ws + "-audit.jsonl";
  std::fprintf(stderr, "find/tar: native, supervise (all), supervise (deny)\n");
  // Native in a scratch cgroup like the session's: a task in the root cgroup
  // is charged to no memory cgroup, which would flatter native.
  Helper nat = runHelper({helper, "--time"}, "/nonexistent", &*native_cg);
  Helper nat_root = runHelper({helper, "--time"}, "/nonexistent");
  Helper nat_seccomp = runHelper({helper, "--time", "--seccomp"}, "/nonexistent", &*native_cg);
  Helper nat_seccomp_sv = runHelper({helper, "--time", "--seccomp-sv"}, "/nonexistent", &*native_cg);
  Helper nat_landlock = runHelper({helper, "--time", "--landlock"}, "/nonexistent", &*native_cg);
  const std::string sv = SV_SUPERVISE_BIN;
  Helper all_sv =
      runHelper({sv, "--backend", "bpf-lsm", "--audit-file", audit, "--", helper, "--time"}, audit);
  fs::remove(audit);
  Helper deny_sv = runHelper({sv, "--backend", "bpf-lsm", "--audit-file", audit, "-o",
                              "audit.level=deny", "--", helper, "--time"},
                             audit);
  fs::remove(audit);
  std::printf("%-30s %12s %12s %12s %8s %8s %s\n", "through supervise", "native ns", "sv-all",
              "sv-deny", "x all", "x deny", "audit lines (all/deny)");
  std::printf("%-30s %12.0f %12.0f %12.0f %8.3f %8.3f %zu/%zu\n", "find tree (2000 files)",
              nat.find, all_sv.find, deny_sv.find, all_sv.find / nat.find, deny_sv.find / nat.find,
              all_sv.audit_lines, deny_sv.audit_lines);
  std::printf("%-30s %12.0f %12.0f %12.0f %8.3f %8.3f\n", "tar tree (2000 files)", nat.tar,
              all_sv.tar, deny_sv.tar, all_sv.tar / nat.tar, deny_sv.tar / nat.tar);
  std::printf("%-30s %12.0f %12.0f %12.0f %8.3f %8.3f (the commands' own CPU time)\n",
              "find tree (2000 files)", nat.cpu_find, all_sv.cpu_find, deny_sv.cpu_find,
              all_sv.cpu_find / nat.cpu_find, deny_sv.cpu_find / nat.cpu_find);
  std::printf("%-30s %12.0f %12.0f %12.0f %8.3f %8.3f (same)\n", "tar tree (2000 files)",
              nat.cpu_tar, all_sv.cpu_tar, deny_sv.cpu_tar, all_sv.cpu_tar / nat.cpu_tar,
              deny_sv.cpu_tar / nat.cpu_tar);
  // Native plus one thing, against plain native: what each part of a session costs.
  auto versusNative = [&](const Helper& h, const char* what) {
    std::printf("%-30s %12.0f %12.0f %8.3f (native %s)\n", "find tree (2000 files)", nat.find,
                h.find, h.find / nat.find, what);
    std::printf("%-30s %12.0f %12.0f %8.3f (same)\n", "tar tree (2000 files)", nat.tar, h.tar,
                h.tar / nat.tar);
  };
  versusNative(nat_seccomp, "under an allow-all seccomp filter");
  versusNative(nat_seccomp_sv, "under supervise's bpf-lsm seccomp filter");
  versusNative(nat_root, "in the root cgroup");
  versusNative(nat_landlock, "in a scopes-only Landlock domain");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ws, ec)) fs::remove_all(e.path(), ec);
  return 0;
}
