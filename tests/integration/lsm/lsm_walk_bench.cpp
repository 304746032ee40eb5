// lsm_walk_bench: what one kernel decision of the BPF-LSM backend costs on
// this host, without a VM. decide_for_test makes the hooks' own table lookup
// and DFA walk `repeat` times in a bpf_loop and times them in the kernel
// (a bpf_loop step included, a few ns). The hooks add bpf_d_path and the
// ring-buffer write to this. For scale, the same run times a native
// open+close of a tmpfs file.
//
// usage: lsm_walk_bench [repeat]   (root; not a test)
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "policy/compile.h"
#include "policy/load.h"
#include "tracer/bpf/lsm_filter.h"

using namespace sv;

int main(int argc, char** argv) {
  const int repeat = argc > 1 ? std::atoi(argv[1]) : 200000;
  policy::LoadRequest r;
  r.preset = "code-sandbox";
  r.workspace = "/ws";
  r.home = "/root";
  policy::LoadResult res = policy::load(r);
  if (!res.ok()) return 2;
  const policy::LsmPlan plan = policy::compileLsm(*res.policy, policy::compile(*res.policy));
  auto filter = tracer::LsmFilter::load(plan, 0, {.test_only = true});
  if (!filter) {
    std::fprintf(stderr, "load: %s\n", filter.error().message().c_str());
    return 77;
  }
  struct Case {
    const char* what;
    policy::LsmOp op;
    const char* path;
  } cases[] = {
      {"root (no byte walked)", policy::LsmOp::Read, "/"},
      {"read /usr/lib/... (stops after 5 bytes)", policy::LsmOp::Read,
       "/usr/lib/x86_64-linux-gnu/libc.so.6"},
      {"write /ws/src/main.cpp (16 bytes)", policy::LsmOp::Write, "/ws/src/main.cpp"},
      {"write /ws/a/b/c/d/e/f/g/h/file.txt (34 bytes)", policy::LsmOp::Write,
       "/ws/a/b/c/d/e/f/g/h/file.txt"},
      {"write /ws/<120 bytes>/.env", policy::LsmOp::Write, nullptr},
  };
  const std::string long_path = "/ws/" + std::string(120, 'x') + "/.env";
  std::printf("repeat %d; mean ns per decision\n", repeat);
  for (const Case& c : cases) {
    const std::string path = c.path ? c.path : long_path;
    auto ns = filter->timeDecisionInKernel(0, c.op, path, repeat);
    if (!ns) {
      std::fprintf(stderr, "%s: %s\n", c.what, ns.error().message().c_str());
      return 1;
    }
    std::printf("%-48s %6u ns\n", c.what, *ns);
  }
  char tmpl[] = "/dev/shm/sv-walk-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return 1;
  close(fd);
  const int opens = repeat / 4;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < opens; ++i) close(open(tmpl, O_RDONLY));
  auto t1 = std::chrono::steady_clock::now();
  unlink(tmpl);
  std::printf("%-48s %6.0f ns\n", "native open+close (tmpfs), for scale",
              std::chrono::duration<double, std::nano>(t1 - t0).count() / opens);
  return 0;
}
