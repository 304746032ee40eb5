// The kernel's own denials are audit events, counted: the real binary runs
// tests/testprogs/kernel_denials, which makes N distinct operations of each
// class Landlock or the seccomp filter refuses, and the audit file must hold
// exactly N deny events of each (enforced_by landlock / seccomp, the rule
// that stands for it), and the host's audit state must be as before.
// Root, Landlock ABI 7 and kernel audit (NETLINK_AUDIT) are needed; without
// them the tests skip with the probe result.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "tests/common/host_features.h"
#include "tests/common/run_command.h"
#include "tracer/kernel_audit/audit_netlink.h"

namespace sv {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
namespace ka = tracer::kernel_audit;

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kProgram = SV_TESTPROGS_DIR "/kernel_denials";
constexpr int kN = 20;

std::string missingKernelAudit() {
  auto control = ka::AuditControl::open();
  if (!control) return "needs NETLINK_AUDIT: " + control.error().message();
  auto status = control->getStatus();
  if (!status) return "needs AUDIT_GET (CAP_AUDIT_CONTROL): " + status.error().message();
  auto listener = ka::AuditListener::open(1 << 16);
  if (!listener) return "needs the audit multicast group: " + listener.error().message();
  return "";
}

uint32_t auditEnabled() {
  auto control = ka::AuditControl::open();
  auto status = control ? control->getStatus() : Result<ka::AuditStatus>(control.error());
  return status ? status->enabled : 99;
}

// The host's audit state once it is `expected` again, or as it is after 30 s:
// the session's tear-down restores it, and may still run once supervise has
// exited (supervisor/session/exit_handoff.h).
uint32_t auditEnabledOnceRestored(uint32_t expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  uint32_t enabled = auditEnabled();
  while (enabled != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    enabled = auditEnabled();
  }
  return enabled;
}

std::vector<json> readEvents(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

std::string ruleOf(const json& e) { return e.contains("rule") ? e["rule"].value("id", "") : ""; }

class KernelDenials : public testing::Test {
 protected:
  void SetUp() override {
    std::string missing = test::missingSessionFeature(kSupervise, 7);
    if (missing.empty()) missing = missingKernelAudit();
    if (!missing.empty()) GTEST_SKIP() << missing;
    // Outside every root of the default preset (not a system read path).
    char outside[] = "/sv-kernel-denials-XXXXXX";
    ASSERT_NE(::mkdtemp(outside), nullptr);
    outside_ = outside;
    for (int i = 0; i < kN; ++i) {
      std::ofstream(outside_ + "/f" + std::to_string(i)) << "secret\n";
      fs::create_directory(outside_ + "/d" + std::to_string(i));
    }
    char ws[] = "/tmp/sv-kd-ws-XXXXXX";
    ASSERT_NE(::mkdtemp(ws), nullptr);
    ws_ = ws;
    // An abstract socket outside the tree (this test process listens).
    abstract_ = "sv-kd-" + std::to_string(::getpid());
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, abstract_.data(), abstract_.size());
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a),
                     socklen_t(sizeof(sa_family_t) + 1 + abstract_.size())),
              0);
    ASSERT_EQ(::listen(listener_, 64), 0);
    enabled_before_ = auditEnabled();
  }
  void TearDown() override {
    if (listener_ >= 0) ::close(listener_);
    std::error_code ec;
    if (!outside_.empty()) fs::remove_all(outside_, ec);
    if (!ws_.empty()) {
      fs::remove_all(ws_, ec);
      for (const char* suffix : {".audit.jsonl", ".run.out", ".run.err"}) fs::remove(ws_ + suffix, ec);
    }
  }

  test::CommandResult run(const std::vector<std::string>& extra_env, int n_foreign) {
    test::CommandOptions options;
    options.cwd = ws_;
    for (char** e = environ; *e; ++e) options.env.emplace_back(*e);
    for (const auto& e : extra_env) options.env.push_back(e);
    audit_ = ws_ + ".audit.jsonl";  // beside the workspace, outside it
    // The program runs from the workspace (the build tree is outside every root).
    const std::string program = ws_ + "/kernel_denials";
    fs::copy_file(kProgram, program, fs::copy_options::overwrite_existing);
    return test::runCommand({kSupervise, "--audit-file", audit_, "--", program,
                             std::to_string(kN), outside_, abstract_, std::to_string(n_foreign)},
                            ws_ + ".run", options);
  }

  std::string outside_, ws_, abstract_, audit_;
  int listener_ = -1;
  uint32_t enabled_before_ = 0;
};

TEST_F(KernelDenials, EveryKernelDenialOfEachClassIsOneEvent) {
  const int n_foreign = test::int80RunsSyscalls() ? kN : 0;
  const test::CommandResult r = run({}, n_foreign);
  ASSERT_EQ(r.status, 0) << r.describe() << "\nstdout:\n" << r.out << "stderr:\n" << r.err;
  const std::vector<json> events = readEvents(audit_);
  std::map<std::string, std::set<std::string>> reads;  // class -> distinct targets
  std::map<std::string, int> count;
  for (const auto& e : events) {
    if (e.value("decision", "") != "deny") continue;
    const std::string by = e.value("enforced_by", ""), rule = ruleOf(e);
    if (by == "landlock" && e.value("category", "") == "file") {
      const std::string path = e["file"].value("path", "");
      ASSERT_EQ(e.value("errno", ""), "EACCES") << e.dump();
      EXPECT_EQ(rule, "default-deny-read") << e.dump();
      EXPECT_TRUE(e.contains("process") && e["process"].value("pid", 0) > 0) << e.dump();
      if (path.rfind(outside_ + "/f", 0) == 0) reads["read"].insert(path);
      if (path.rfind(outside_ + "/d", 0) == 0) reads["readdir"].insert(path);
    } else if (by == "landlock" && rule == "landlock-scope-signal") {
      EXPECT_GT(e["target"].value("pid", 0), 0) << e.dump();
      count["signal"]++;
    } else if (by == "landlock" && rule == "landlock-scope-abstract-unix-socket") {
      EXPECT_EQ(e["network"].value("unix_path", ""), "@" + abstract_) << e.dump();
      count["abstract"]++;
    } else if (by == "seccomp") {
      count[rule]++;
    }
  }
  EXPECT_EQ(reads["read"].size(), size_t(kN)) << r.err;
  EXPECT_EQ(reads["readdir"].size(), size_t(kN)) << r.err;
  EXPECT_EQ(count["signal"], kN);
  EXPECT_EQ(count["abstract"], kN);
  for (const char* sys : {"ptrace", "bpf", "io_uring_setup", "mount", "unshare"})
    EXPECT_EQ(count[std::string("seccomp:") + sys], kN) << sys;
  EXPECT_EQ(count["seccomp-foreign-abi"], n_foreign);
  // Exactly: no event twice, none of another process.
  int landlock_fs = 0;
  for (const auto& e : events)
    if (e.value("enforced_by", "") == "landlock" && e.value("category", "") == "file") ++landlock_fs;
  EXPECT_EQ(landlock_fs, 2 * kN);
  // The stderr denial line too.
  EXPECT_NE(r.err.find("supervise: denied read of " + outside_ + "/f0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(rule seccomp:ptrace"), std::string::npos) << r.err;
  // The session's start event says the classes are recorded, and how.
  bool rows = false;
  for (const auto& e : events)
    if (e.value("operation", "") == "start")
      for (const auto& row : e["session"]["backend_matrix"])
        if (row["id"] == "audit.landlock_denials") rows = row["enforceable"].get<bool>();
  EXPECT_TRUE(rows);
  // The host's audit state is as it was.
  EXPECT_EQ(auditEnabledOnceRestored(enabled_before_), enabled_before_);
}

// Past audit's rate limit the kernel drops records and counts them as lost:
// a session whose records were dropped says so on stderr, before its exit
// status (the tear-down after an early exit has no stderr left to say it on).
TEST_F(KernelDenials, RecordsTheKernelDroppedAreSaidOnStderr) {
  auto control = ka::AuditControl::open();
  ASSERT_TRUE(control) << control.error().message();
  auto before = control->getStatus();
  ASSERT_TRUE(before) << before.error().message();
  // AUDIT_FAIL_PANIC: a lost record would panic the host.
  if (before->failure == 2) GTEST_SKIP() << "audit failure mode is panic here";
  if (before->enabled == 2) GTEST_SKIP() << "audit is locked here";
  // One record a second, host-wide, for this run only (the target runs
  // SERIAL): the program's 160 denials arrive in well under a second.
  ASSERT_TRUE(control->setRateLimit(1)) << "AUDIT_SET rate_limit";
  struct RestoreRateLimit {
    ka::AuditControl& control;
    uint32_t rate_limit;
    ~RestoreRateLimit() { EXPECT_TRUE(control.setRateLimit(rate_limit)) << "rate_limit not restored"; }
  } restore{*control, before->rate_limit};
  const test::CommandResult r = run({}, 0);
  ASSERT_EQ(r.status, 0) << r.describe() << r.err;
  EXPECT_NE(r.err.find("kernel audit record(s) lost during the session"), std::string::npos)
      << r.err;
  EXPECT_EQ(auditEnabledOnceRestored(enabled_before_), enabled_before_);
}

TEST_F(KernelDenials, WhereTheyCannotBeReadTheSessionSaysSo) {
  const test::CommandResult r = run({"SUPERVISE_TEST_DISABLE=kernel-audit"}, 0);
  ASSERT_EQ(r.status, 0) << r.describe() << r.err;
  int landlock = 0;
  std::string detail;
  for (const auto& e : readEvents(audit_)) {
    if (e.value("enforced_by", "") == "landlock") ++landlock;
    if (e.value("operation", "") == "start")
      for (const auto& row : e["session"]["backend_matrix"])
        if (row["id"] == "audit.landlock_denials" || row["id"] == "audit.seccomp_denials") {
          EXPECT_FALSE(row["enforceable"].get<bool>()) << row.dump();
          detail += row["detail"].get<std::string>() + "\n";
        }
  }
  EXPECT_EQ(landlock, 0);
  EXPECT_NE(detail.find("unrecorded: kernel audit: unavailable (disabled by"), std::string::npos)
      << detail;
  EXPECT_EQ(auditEnabledOnceRestored(enabled_before_), enabled_before_);
}

}  // namespace
}  // namespace sv
