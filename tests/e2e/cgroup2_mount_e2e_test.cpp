// supervise where its mount namespace has no cgroup2 (issue 19): it mounts
// one at /run/supervise/cgroup2 (tracer/cgroup.h) and the session runs as
// anywhere else, its network policy enforced by the cgroup BPF programs.
//
//  - IpNetnsExec: `ip netns exec NS supervise -- cmd`, whose remount of /sys
//    hides the cgroup mounts. In a netns of its own (loopback only, no other
//    device, no route) the command connects to a loopback listener of its own
//    and to 198.51.100.1:9: the first connects, the second fails with EPERM
//    (the cgroup connect4 program refuses it before routing, which would
//    say ENETUNREACH) and is one deny event of cgroup-bpf in the audit file.
//  - Unmounted: the same command where cgroup2 was unmounted (umount -l) in a
//    private mount namespace (unshare --mount --net --propagation private;
//    the netns has loopback only, so nothing leaves either). In both, the
//    session start event's process_tree row says where supervise mounted it.
//  - DoctorSaysWhereASessionMountsIt: `doctor --json` there reports the
//    mount a session would make, probed on a private mount of its own that
//    its caller's namespace never sees.
//  - RefusesWith125WhereNoneCanBeMounted / ...WithoutCapSysAdmin: with /run
//    read-only too, or without CAP_SYS_ADMIN, exit 125 and a message saying
//    what happened, what to do and which step failed; the command never runs.
// Each test checks that the host's own cgroup2 mounts are as they were. The
// empty directory /run/supervise/cgroup2 stays on the host's /run (like
// /run/supervise/kernel-audit); it is never removed here, since another
// namespace may have a session's mount on it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/audit_connects.h"
#include "tests/common/host_features.h"
#include "tests/common/run_command.h"

namespace sv::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kMountDir = "/run/supervise/cgroup2";  // tracer::kCgroup2MountDir
constexpr const char* kTestHost = "198.51.100.1";  // TEST-NET-2: nothing here routes to it
constexpr int kTestPort = 9;

// A loopback listener of the command's own, a connect to it, a connect to the
// test host: "loopback ok" / "remote <errno name>".
constexpr const char* kProbeScript = R"(import errno, socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname(), timeout=5); print("loopback ok", flush=True)
d = socket.socket()
try:
    d.settimeout(5); d.connect(("198.51.100.1", 9)); print("remote connected")
except OSError as e:
    print("remote", errno.errorcode.get(e.errno, e.errno))
)";

// The mount point of every cgroup2 mount in mountinfo `text`, with its super
// options: what must be the same after each test.
std::vector<std::string> cgroup2Mounts(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t sep = line.find(" - cgroup2 ");
    if (sep == std::string::npos) continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, devno, root, point;
    head >> id >> parent >> devno >> root >> point;
    out.push_back(point + " " + line.substr(line.rfind(' ') + 1));
  }
  return out;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<json> readEvents(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

// The detail of the session start event's process_tree row.
std::string processTreeDetail(const std::vector<json>& events) {
  for (const auto& e : events) {
    if (e.value("operation", "") != "start" || e.value("category", "") != "session") continue;
    for (const auto& row : e["session"].value("backend_matrix", json::array()))
      if (row.value("id", "") == "process_tree") return row.value("detail", "");
  }
  return "(no process_tree row in a session start event)";
}

class Cgroup2MountE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = missingSessionFeature(kSupervise); !why.empty()) GTEST_SKIP() << why;
    for (const char* tool : {"/usr/bin/python3", "/usr/bin/unshare"})
      if (::access(tool, X_OK) != 0) GTEST_SKIP() << "needs " << tool;
    if (::access("/usr/sbin/ip", X_OK) != 0 && ::access("/sbin/ip", X_OK) != 0 &&
        ::access("/usr/bin/ip", X_OK) != 0)
      GTEST_SKIP() << "needs iproute2 `ip`: not found";
    host_cgroup2_ = cgroup2Mounts(slurp("/proc/self/mountinfo"));
    char tmpl[] = "/tmp/sv-cg2-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/ws");
    audit_ = root_ + "/audit.jsonl";
  }

  void TearDown() override {
    if (root_.empty()) return;  // skipped
    // Nothing of a session's mount reached the host's namespace.
    EXPECT_EQ(cgroup2Mounts(slurp("/proc/self/mountinfo")), host_cgroup2_)
        << "the host's cgroup2 mounts changed";
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // The host's cgroup2 mount point (the test's own namespace), "" if none.
  std::string hostCgroup2() const {
    return host_cgroup2_.empty() ? "" : host_cgroup2_[0].substr(0, host_cgroup2_[0].find(' '));
  }

  // `sh -c script` in a private mount namespace where cgroup2 is unmounted,
  // and a network namespace of its own (loopback only: nothing leaves).
  std::vector<std::string> withoutCgroup2(const std::string& then) const {
    std::string script = "ip link set lo up && ";
    for (const auto& m : host_cgroup2_) script += "umount -l " + m.substr(0, m.find(' ')) + " && ";
    // What the command may assume: cgroup2 is gone from this namespace.
    script += "! grep -q ' - cgroup2 ' /proc/self/mountinfo && " + then;
    return {"/usr/bin/unshare", "--mount", "--net", "--propagation",
            "private",          "/bin/sh", "-c",    script};
  }

  // The probe script, unsupervised and supervised (shell words).
  static std::string plainProbe() { return "/usr/bin/python3 -c " + shellQuote(kProbeScript); }
  std::string superviseProbe() const {
    return std::string(kSupervise) + " --audit-file " + audit_ + " -- " + plainProbe();
  }

  CommandResult run(const std::vector<std::string>& argv) {
    CommandOptions options;
    options.cwd = root_ + "/ws";
    return runCommand(argv, root_ + "/run-" + std::to_string(++runs_), options);
  }

  // The command connected over loopback, and the test host's connect was
  // refused with EPERM by the cgroup connect4 program, one deny event.
  void expectPolicyEnforced(const CommandResult& r) {
    EXPECT_EQ(r.status, 0) << r.describe();
    EXPECT_EQ(r.out, "loopback ok\nremote EPERM\n") << r.describe();
    const auto denied = auditedConnects(audit_, kTestHost, kTestPort);
    ASSERT_EQ(denied.size(), 1u) << slurp(audit_);
    EXPECT_EQ(denied[0].decision, "deny");
    EXPECT_EQ(denied[0].errno_name, "EPERM");
    bool by_bpf = false;
    for (const auto& e : readEvents(audit_))
      if (e.value("category", "") == "network" && e.value("decision", "") == "deny")
        by_bpf = e.value("enforced_by", "") == "cgroup-bpf";
    EXPECT_TRUE(by_bpf) << slurp(audit_);
    EXPECT_NE(processTreeDetail(readEvents(audit_)).find(kMountDir), std::string::npos)
        << "the start event does not say where supervise mounted cgroup2\n"
        << processTreeDetail(readEvents(audit_));
  }

  std::vector<std::string> host_cgroup2_;
  std::string root_, audit_;
  int runs_ = 0;
};

class IpNetnsExec : public Cgroup2MountE2e {
 protected:
  void SetUp() override {
    Cgroup2MountE2e::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    netns_ = "sv-cg2-" + std::to_string(::getpid());
    auto added = run({"/bin/sh", "-c", "ip netns add " + netns_});
    ASSERT_EQ(added.status, 0) << added.describe();
    added_ = true;
    auto lo = run({"/bin/sh", "-c", "ip -n " + netns_ + " link set lo up"});
    ASSERT_EQ(lo.status, 0) << lo.describe();
  }

  void TearDown() override {
    if (added_) {
      auto del = run({"/bin/sh", "-c", "ip netns del " + netns_});
      EXPECT_EQ(del.status, 0) << del.describe();
    }
    Cgroup2MountE2e::TearDown();
  }

  std::string netns_;
  bool added_ = false;
};

TEST_F(IpNetnsExec, CommandRunsAndTheNetworkPolicyHolds) {
  // Control, unsupervised: in the namespace the test host is no route away
  // (ENETUNREACH), and `ip netns exec` leaves no cgroup2 mounted.
  const std::string in_ns = "ip netns exec " + netns_ + " ";
  auto control = run({"/bin/sh", "-c",
                      in_ns + "sh -c '! grep -q \" - cgroup2 \" /proc/self/mountinfo' && " + in_ns +
                          plainProbe()});
  ASSERT_EQ(control.status, 0) << control.describe();
  ASSERT_EQ(control.out, "loopback ok\nremote ENETUNREACH\n") << control.describe();

  expectPolicyEnforced(run({"/bin/sh", "-c", "exec " + in_ns + superviseProbe()}));
}

TEST_F(Cgroup2MountE2e, UnmountedInAPrivateMountNamespace) {
  if (hostCgroup2().empty()) GTEST_SKIP() << "needs a cgroup2 mount to unmount";
  // Control, unsupervised: the test host is no route away there.
  auto control = run(withoutCgroup2(plainProbe()));
  ASSERT_EQ(control.status, 0) << control.describe();
  ASSERT_EQ(control.out, "loopback ok\nremote ENETUNREACH\n") << control.describe();

  expectPolicyEnforced(run(withoutCgroup2("exec " + superviseProbe())));
}

TEST_F(Cgroup2MountE2e, DoctorSaysWhereASessionMountsIt) {
  if (hostCgroup2().empty()) GTEST_SKIP() << "needs a cgroup2 mount to unmount";
  const std::string out = root_ + "/doctor.json";
  // After doctor, its caller's namespace still has no cgroup2: doctor's was private.
  auto r = run(withoutCgroup2(std::string(kSupervise) + " doctor --json > " + out +
                              "; echo doctor=$?; grep -c ' - cgroup2 ' /proc/self/mountinfo"));
  EXPECT_EQ(r.out, "doctor=0\n0\n") << r.describe() << slurp(out);
  json j = json::parse(slurp(out), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << slurp(out);
  EXPECT_EQ(j["host"]["cgroup2_mount"], kMountDir) << j["host"].dump();
  EXPECT_EQ(j["host"]["cgroup2_mounted_by_supervise"], true) << j["host"].dump();
  EXPECT_EQ(j["host"]["cgroup_writable"], true) << j["host"].dump();
  bool saw = false;
  for (const auto& c : j["checks"]) {
    if (c.value("id", "") != "cgroup.v2") continue;
    saw = true;
    EXPECT_EQ(c.value("status", ""), "ok") << c.dump();
    EXPECT_EQ(c.value("value", ""), kMountDir) << c.dump();
    EXPECT_NE(c.value("detail", "").find("no cgroup2 is mounted in this mount namespace"),
              std::string::npos)
        << c.dump();
  }
  EXPECT_TRUE(saw) << "no cgroup.v2 check\n" << j["checks"].dump(1);
}

TEST_F(Cgroup2MountE2e, RefusesWith125WhereNoneCanBeMounted) {
  if (hostCgroup2().empty()) GTEST_SKIP() << "needs a cgroup2 mount to unmount";
  // A read-only /run: no directory to mount on. (Not the host's /run: this
  // namespace's, a tmpfs over it.)
  auto r = run(withoutCgroup2("mount -t tmpfs -o ro none /run && exec " + superviseProbe()));
  EXPECT_EQ(r.status, 125) << r.describe();
  EXPECT_EQ(r.out, "") << "the command ran\n" << r.describe();
  for (const char* said :
       {"no cgroup2 filesystem is mounted", "cannot mount one at /run/supervise/cgroup2",
        "What failed: mkdir /run/supervise: Read-only file system",
        "mount one yourself, e.g. `mount -t cgroup2 none /sys/fs/cgroup`",
        "refusing to run the command unconfined"})
    EXPECT_NE(r.err.find(said), std::string::npos) << "missing: " << said << "\n" << r.describe();
}

TEST_F(Cgroup2MountE2e, RefusesWith125WithoutCapSysAdmin) {
  if (hostCgroup2().empty()) GTEST_SKIP() << "needs a cgroup2 mount to unmount";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/setpriv";
  // Root without CAP_SYS_ADMIN (dropped from the bounding set): mount refused.
  auto r = run(withoutCgroup2(
      "exec /usr/bin/setpriv --bounding-set -sys_admin --inh-caps -sys_admin " + superviseProbe()));
  EXPECT_EQ(r.status, 125) << r.describe();
  EXPECT_EQ(r.out, "") << "the command ran\n" << r.describe();
  for (const char* said :
       {"cannot mount one at /run/supervise/cgroup2 (it needs CAP_SYS_ADMIN: run it as root)",
        "mount one yourself",
        "What failed: mount -t cgroup2 cgroup2 /run/supervise/cgroup2: "
        "Operation not permitted"})
    EXPECT_NE(r.err.find(said), std::string::npos) << "missing: " << said << "\n" << r.describe();
}

}  // namespace
}  // namespace sv::test
