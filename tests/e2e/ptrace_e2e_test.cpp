// The ptrace backend (docs/enforcement.md, "The ptrace backend") through the
// real binary, on what only it has: the same verdicts and rules as the host
// backend on one generated list of operations (the differential), nested
// tracing as a clear error, a debugger in the tree refused without a hang,
// and the scratch region out of the tree's reach. The whole e2e, escape and
// faults suites run under this backend too (label *-ptrace).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/audit_events.h"
#include "tests/common/host_features.h"
#include "tests/common/run_command.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class Ptrace : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = missingSessionFeature(kSupervise); !missing.empty())
      GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/sv-ptrace-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // A fresh workspace `name` under the test dir, prepared by `setup` (sh).
  std::string workspace(const std::string& name, const std::string& setup) {
    const std::string ws = dir_ + "/" + name;
    fs::create_directories(ws);
    CommandOptions o;
    o.cwd = ws;
    auto r = runCommand({"/bin/sh", "-c", setup}, dir_ + "/" + name + "-setup", o);
    EXPECT_EQ(r.status, 0) << r.describe();
    return ws;
  }
  CommandResult run(const std::string& ws, std::vector<std::string> args, const std::string& name) {
    CommandOptions o;
    o.cwd = ws;
    std::vector<std::string> argv = {kSupervise};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, dir_ + "/" + name, o);
  }
  std::string dir_;
};

// One operation per line, each printing its outcome: absolute, relative,
// "..", symlinked and dirfd-like (cd) paths; creates, writes, renames,
// links, unlinks, mkdirs, execs; allowed and denied by every kind of rule.
std::string generatedOperations() {
  std::ostringstream s;
  const std::string tmp = "/tmp/sv-ptrace-tmp-" + std::to_string(::getpid());
  const char* targets[] = {"a.txt", ".env", ".env.local", ".git/config", ".git/hooks/pre-commit",
                           "sub/b.txt", "sub/../c.txt", "link-to-env", "link-to-a",
                           "/etc/sv-ptrace-nope", tmp.c_str(), "sub/.env"};
  int n = 0;
  for (const char* t : targets) {
    s << "echo x > " << t << " 2>/dev/null; echo " << n++ << " write " << t << " $?\n";
    s << "echo y >> " << t << " 2>/dev/null; echo " << n++ << " append " << t << " $?\n";
    s << "cat " << t << " >/dev/null 2>&1; echo " << n++ << " read " << t << " $?\n";
    s << "mkdir " << t << ".d 2>/dev/null; echo " << n++ << " mkdir " << t << " $?\n";
    s << "ln -s a.txt " << t << ".sl 2>/dev/null; echo " << n++ << " symlink " << t << " $?\n";
    s << "ln a.txt " << t << ".hl 2>/dev/null; echo " << n++ << " link " << t << " $?\n";
    s << "mv " << t << " " << t << ".mv 2>/dev/null; echo " << n++ << " rename " << t << " $?\n";
    s << "mv " << t << ".mv " << t << " 2>/dev/null; echo " << n++ << " rename-back " << t
      << " $?\n";
    s << "chmod 600 " << t << " 2>/dev/null; echo " << n++ << " chmod " << t << " $?\n";
    s << "touch " << t << " 2>/dev/null; echo " << n++ << " touch " << t << " $?\n";
    s << "(cd sub && echo z > ../" << t << ") 2>/dev/null; echo " << n++ << " cd-write " << t
      << " $?\n";
    s << "rm -f " << t << ".sl " << t << ".hl 2>/dev/null; echo " << n++ << " unlink " << t
      << " $?\n";
  }
  s << "cp /bin/true ./mytrue; ./mytrue; echo " << n++ << " exec-copied $?\n";
  s << "/bin/true; echo " << n++ << " exec-system $?\n";
  s << "rm -rf " << tmp << " " << tmp << ".*; true\n";
  return s.str();
}

const char* kSetup =
    "git init -q . && mkdir -p sub && echo a > a.txt && echo e > .env && "
    "ln -s .env link-to-env && ln -s a.txt link-to-a";

// (operation, path relative to the workspace, decision, rule) of each file and exec decision.
std::vector<std::string> decisions(const std::string& audit, const std::string& ws) {
  std::vector<std::string> out;
  for (const auto& e : readAuditEvents(audit)) {
    const std::string cat = e.value("category", "");
    if (cat != "file" && cat != "exec") continue;
    std::string path = cat == "file" ? e["file"].value("path", "") : e["exec"].value("path", "");
    if (path.starts_with(ws)) path = "." + path.substr(ws.size());
    if (path.starts_with("/tmp/sv-ptrace-tmp-")) path = "/tmp/sv-ptrace-tmp-*";
    out.push_back(e.value("operation", "") + " " + path + " " + e.value("decision", "") + " " +
                  e.value("rule", json::object()).value("id", ""));
  }
  return out;
}

TEST_F(Ptrace, SameVerdictsAndRulesAsTheHostBackend) {
  const std::string script = generatedOperations();
  std::vector<std::string> outputs, trails;
  size_t ops = 0;
  for (const char* backend : {"host", "ptrace"}) {
    const std::string ws = workspace(std::string("ws-") + backend, kSetup);
    const std::string audit = dir_ + "/" + backend + ".jsonl";
    auto r = run(ws, {"--backend", backend, "--quiet", "--audit-file", audit, "--", "sh", "-c", script},
                 backend);
    ASSERT_EQ(r.status, 0) << r.describe();
    outputs.push_back(r.out);
    auto d = decisions(audit, ws);
    std::ostringstream joined;
    for (const auto& line : d) joined << line << "\n";
    trails.push_back(joined.str());
    ops = static_cast<size_t>(std::count(r.out.begin(), r.out.end(), '\n'));
    for (const auto& e : readAuditEvents(audit))
      if (e.value("category", "") == "file") {
        EXPECT_EQ(e.value("enforced_by", ""), std::string(backend) == "host" ? "seccomp" : "ptrace");
      }
  }
  EXPECT_GT(ops, 140u);
  EXPECT_EQ(outputs[0], outputs[1]) << "the operations' exit statuses differ (host, then ptrace)";
  EXPECT_EQ(trails[0], trails[1]) << "the decisions differ (host, then ptrace)";
  // The list must hold both outcomes, or it proves nothing.
  EXPECT_TRUE(has(trails[1], " deny deny-write-env")) << trails[1];
  EXPECT_TRUE(has(trails[1], " allow ")) << trails[1];
  std::printf("differential: %zu operations, %zu decisions per backend, identical\n", ops,
              static_cast<size_t>(std::count(trails[1].begin(), trails[1].end(), '\n')));
}

TEST_F(Ptrace, ATracedSupervisorIsAClearErrorNotAHang) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "strace not installed";
  const std::string ws = workspace("ws", "true");
  CommandOptions o;
  o.cwd = ws;
  // LeakSanitizer can't run under ptrace: in a sanitizer build it would turn
  // supervise's own exit status into 1, hiding the one under test.
  auto r = runCommand({"/usr/bin/env", "ASAN_OPTIONS=detect_leaks=0", "/usr/bin/strace", "-f", "-o", "/dev/null",
                       kSupervise, "--backend", "ptrace", "--", "touch", "marker"},
                      dir_ + "/nested", o);
  EXPECT_EQ(r.status, 125) << r.describe();
  EXPECT_TRUE(has(r.err, "traced already")) << r.describe();
  EXPECT_FALSE(fs::exists(ws + "/marker")) << "the command ran untraced";
}

TEST_F(Ptrace, ADebuggerInTheTreeIsRefused) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "strace not installed";
  const std::string ws = workspace("ws", "true");
  auto r = run(ws, {"--backend", "ptrace", "--", "strace", "-o", "/dev/null", "true"}, "debugger");
  EXPECT_NE(r.status, 0) << r.describe();
  EXPECT_TRUE(has(r.err, "Operation not permitted")) << r.describe();
}

// mprotect/munmap/mmap over the scratch region: EPERM; its page stays
// read-only and mapped; /proc/self/mem can't be opened to write it.
TEST_F(Ptrace, TheScratchRegionIsOutOfTheTreesReach) {
  const std::string ws = workspace("ws", "true");
  std::ofstream(ws + "/probe.py") << R"(import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def err(rc): return 0 if rc == 0 else ctypes.get_errno()
print("mprotect", err(libc.mprotect(ctypes.c_void_p(0x100000), 4096, 3)))
print("munmap", err(libc.munmap(ctypes.c_void_p(0x100000), 4096)))
p = libc.mmap(0x100000, 4096, 3, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x10, -1, 0)
print("mmap-fixed", ctypes.get_errno() if p in (None, 2**64 - 1) else 0)
print("maps", [l.split()[1] for l in open("/proc/self/maps") if l.startswith("00100000-")])
try:
    open("/proc/self/mem", "r+b"); print("mem", 0)
except OSError as e: print("mem", e.errno)
)";
  for (const char* python : {"python3", "/usr/bin/python3"}) {  // PATH's (a pyenv shim here), and Debian's
    auto r = run(ws, {"--backend", "ptrace", "--", python, "probe.py"}, "scratch");
    ASSERT_EQ(r.status, 0) << r.describe();
    EXPECT_TRUE(has(r.out, "mprotect 1\n")) << r.out;
    EXPECT_TRUE(has(r.out, "munmap 1\n")) << r.out;
    EXPECT_TRUE(has(r.out, "mmap-fixed 1\n")) << r.out;
    EXPECT_TRUE(has(r.out, "maps ['r--p']")) << r.out;
    EXPECT_TRUE(has(r.out, "mem 13\n")) << r.out;
    EXPECT_TRUE(has(r.err, "self-protect:process-memory")) << r.describe();
  }
}

// An allowed open runs from one of its address space's 64 scratch slots and
// holds it until the syscall returns. 100 threads blocked at once in opens
// of FIFOs (no reader yet) hold 64; the other 36 must wait for a slot, not
// fail (they failed EAGAIN before). The reader, a process of its own, comes
// once every thread has reached its open. Under the host backend too.
TEST_F(Ptrace, MoreConcurrentOpensThanScratchSlotsWaitForOne) {
  const std::string ws = workspace("ws", std::string("cp ") + SV_TESTPROGS_DIR +
                                              "/fifo_writers . && for i in $(seq 0 99); do "
                                              "mkfifo fifo$i; done");
  for (const char* backend : {"ptrace", "host"}) {
    auto r = run(ws, {"--backend", backend, "--", "./fifo_writers", "100", ws},
                 std::string("fifos-") + backend);
    EXPECT_EQ(r.status, 0) << backend << ": " << r.describe();
    EXPECT_TRUE(has(r.out, "opened=100 failed=0 reader=0")) << backend << ": " << r.describe();
  }
}

// Under ptrace an allowed open runs as openat2 from a scratch slot: the
// program must get back its call as it made it. The argument registers are
// as they were (the syscall ABI keeps them; compiled code may rely on it),
// and an open a signal interrupts, restarted by SA_RESTART with the
// registers it stopped with, opens the file it named, though another
// thread's open had its slot meanwhile (before: that thread's file). And
// a file opened for write, made or not, is as blocking as the open asked.
TEST_F(Ptrace, AnOpenReturnsAsCalledAndARestartOpensWhatItNamed) {
  const std::string ws = workspace(
      "ws", std::string("cp ") + SV_TESTPROGS_DIR + "/open_as_called . && mkfifo fifo");
  for (const char* backend : {"ptrace", "host"}) {
    auto r = run(ws, {"--backend", backend, "--", "./open_as_called", ws},
                 std::string("as-called-") + backend);
    EXPECT_EQ(r.status, 0) << backend << ": " << r.describe();
    EXPECT_EQ(r.out, "registers kept\nrestart opened the fifo\nstatus flags as asked\n")
        << backend << ": " << r.describe();
  }
}

}  // namespace
}  // namespace sv::test
