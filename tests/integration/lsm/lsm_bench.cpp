// lsm_bench: the cost of the BPF-LSM backend, measured in the same VM and
// the same run as the native baseline (tools/vm/run; numbers in
// docs/bpf-lsm.md). Each workload runs in a forked child in a scratch
// cgroup: once in a cgroup no filter judges (native), then in the session
// cgroup with every decision reported, then with denials only reported.
//
// usage (in the guest): lsm_bench [ITERATIONS]
// Prints one line per workload: native ns/op, bpf-lsm ns/op (all events),
// bpf-lsm ns/op (deny events only) and the ratios.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
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
#include "tracer/lsm_filter.h"
#include "tracer/net_filter.h"

namespace fs = std::filesystem;
using namespace sv;

namespace {

// Runs body in a child inside cgroup `cg` (once to warm up, then timed,
// best of three): ns of the body alone, without the fork and cgroup join.
double timed(const tracer::ScratchCgroup& cg, const std::function<void()>& body) {
  auto* best = static_cast<double*>(
      mmap(nullptr, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  pid_t pid = fork();
  if (pid == 0) {
    if (!cg.addProcess(0).ok()) _exit(120);
    body();
    *best = 1e300;
    for (int r = 0; r < 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      body();
      auto t1 = std::chrono::steady_clock::now();
      *best = std::min(*best, std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::fprintf(stderr, "workload failed\n");
  double ns = *best;
  munmap(best, sizeof(double));
  return ns;
}

// Runs a static busybox applet copied into the scratch tmpfs: an exec from
// the virtiofs share costs over a second under TCG and would drown the
// difference being measured.
std::string g_busybox;
void busybox(std::vector<std::string> args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv{g_busybox.data()};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execv(g_busybox.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
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
  g_busybox = ws + "/busybox";
  fs::copy_file("/bin/busybox", g_busybox);
  fs::permissions(g_busybox, fs::perms::owner_all);
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
  auto parent = tracer::currentCgroup2Dir();
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
  const std::string file = ws + "/file.txt", tree = ws + "/tree";
  std::vector<Workload> work = {
      {"open+close (read, allowed)", n,
       [&] {
         for (int i = 0; i < n; ++i) close(open(file.c_str(), O_RDONLY));
       }},
      {"open+close (write, allowed)", n,
       [&] {
         for (int i = 0; i < n; ++i) close(open(file.c_str(), O_WRONLY));
       }},
      {"open (write .env, denied)", n,
       [&] {
         std::string env = ws + "/.env";
         for (int i = 0; i < n; ++i) close(open(env.c_str(), O_WRONLY | O_CREAT, 0644));
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
      {"find tree (2000 files)", 1,
       [&] {
         busybox({"find", tree});
       }},
      {"tar tree (2000 files)", 1,
       [&] {
         busybox({"tar", "cf", "-", tree});
       }},
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
  fs::remove_all(ws);
  return 0;
}
