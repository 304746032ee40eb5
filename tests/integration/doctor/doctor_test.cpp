// supervise doctor / status: the capability matrix on synthetic hosts, config
// discovery in temp dirs, and the real probes and binary on this host.
#include "supervisor/cli/doctor_report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "policy/load.h"
#include "tracer/bpf/lsm_filter.h"

namespace sv::supervisor {
namespace {

namespace fs = std::filesystem;

HostCaps fullHost() {
  HostCaps c;
  c.seccomp_notify = c.notify_addfd = c.notify_sync_wakeup = true;
  c.landlock_abi = 7;
  c.cgroup2 = c.cgroup_writable = c.cgroup_kill = true;
  c.cgroup_sock_addr = c.bpf_ringbuf = c.bpf_tracepoint = true;
  return c;
}

std::shared_ptr<const policy::Policy> loadPreset(const std::string &preset,
                                                 std::vector<std::string> overrides = {}) {
  policy::LoadRequest req;
  req.preset = preset;
  req.workspace = "/tmp";
  req.home = "/root";
  req.overrides = std::move(overrides);
  auto res = policy::load(req);
  EXPECT_TRUE(res.ok());
  return res.policy;
}

const FeatureRow &row(const std::vector<FeatureRow> &rows, const std::string &id) {
  for (const auto &r : rows)
    if (r.id == id) return r;
  ADD_FAILURE() << "no row " << id;
  static FeatureRow none;
  return none;
}

TEST(DoctorMatrixTest, CodeSandboxOnFullHostIsFullyEnforceable) {
  auto p = loadPreset("code-sandbox");
  auto rows = featureMatrix(fullHost(), *p);
  EXPECT_TRUE(fullyEnforceable(rows));
  EXPECT_EQ(row(rows, "file_roots").backend, "landlock");
  EXPECT_EQ(row(rows, "deny_globs").backend, "seccomp-notify");
  EXPECT_TRUE(row(rows, "deny_globs").used);
  EXPECT_TRUE(row(rows, "network.localhost").used);
  EXPECT_EQ(row(rows, "network.localhost").backend, "cgroup-bpf");
  EXPECT_FALSE(row(rows, "network.none").used);
  EXPECT_EQ(row(rows, "process_tree").backend, "cgroup");
}

TEST(DoctorMatrixTest, AutoBackendIsHostWithoutTheBpfLsmAndSaysWhy) {
  HostCaps c = fullHost();
  c.why["bpf_lsm"] = "BPF_PROG_LOAD lsm/file_open: EPERM (Operation not permitted)";
  auto rows = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_EQ(row(rows, "backend").backend, "host");
  EXPECT_NE(row(rows, "backend").detail.find("bpf-lsm: BPF_PROG_LOAD lsm/file_open: EPERM"),
            std::string::npos)
      << row(rows, "backend").detail;
  EXPECT_EQ(row(rows, "file_roots").backend, "landlock");
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// A host like the 6.12 guest: the BPF LSM active, every hook's program loads.
HostCaps bpfLsmHost() {
  HostCaps c = fullHost();
  c.bpf_lsm_active = c.bpf_lsm_loadable = c.bpf_lsm_path_hooks = true;
  return c;
}

TEST(DoctorMatrixTest, AutoBackendIsBpfLsmWhereItLoadsAndNamesItPerFeature) {
  auto rows = featureMatrix(bpfLsmHost(), *loadPreset("code-sandbox"));
  EXPECT_TRUE(fullyEnforceable(rows));
  EXPECT_EQ(row(rows, "backend").backend, "bpf-lsm");
  for (const char* id : {"exec_rules", "profiles"})
    EXPECT_EQ(row(rows, id).backend, "bpf-lsm") << id;
  EXPECT_EQ(row(rows, "network.localhost").backend, "cgroup-bpf");
}

// Renames, links, utimes and xattr calls stay notified under bpf-lsm on
// every kernel (lsmSeccompPlan): the file rules are decided by both, and
// the detail says which calls user space keeps.
TEST(DoctorMatrixTest, BpfLsmWithEveryPathHookStillLeavesRenamesAndLinksToUserNotify) {
  auto rows = featureMatrix(bpfLsmHost(), *loadPreset("code-sandbox"));
  for (const char *id : {"file_roots", "deny_globs"}) {
    const auto &r = row(rows, id);
    EXPECT_TRUE(r.enforceable) << id;
    EXPECT_EQ(r.backend, "bpf-lsm + seccomp-notify") << id;
    EXPECT_TRUE(contains(r.detail, "per open and path change")) << r.detail;
    EXPECT_TRUE(contains(r.detail, "renames, links, utimes and xattr calls decided in user space"))
        << r.detail;
    EXPECT_FALSE(contains(r.detail, "write opens")) << r.detail;
  }
  EXPECT_TRUE(contains(row(rows, "backend").detail, "user-notify keeps renames, links"))
      << row(rows, "backend").detail;
}

// The 6.1 guest: LSM programs load, but the verifier refuses bpf_d_path in
// the path_* hooks, so a session keeps write opens and path changes on
// user-notify; doctor must not claim bpf-lsm decides them.
TEST(DoctorMatrixTest, BpfLsmWithoutPathHooksSaysUserNotifyDecidesWritesAndWhy) {
  HostCaps c = bpfLsmHost();
  c.bpf_lsm_path_hooks = false;
  c.why["bpf_lsm_path_hooks"] =
      "path_mknod: no bpf_path_d_path kfunc; path_unlink, path_mkdir: bpf_d_path: helper call "
      "is not allowed in this hook";
  auto rows = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_TRUE(fullyEnforceable(rows));
  EXPECT_EQ(row(rows, "backend").backend, "bpf-lsm");
  for (const char *id : {"file_roots", "deny_globs"}) {
    const auto &r = row(rows, id);
    EXPECT_EQ(r.backend, "bpf-lsm + seccomp-notify") << id;
    EXPECT_TRUE(contains(r.detail, "per read open") || contains(r.detail, "reads decided per open"))
        << r.detail;
    EXPECT_TRUE(contains(r.detail, "write opens and path changes (creates, unlinks, mkdir, "
                                   "renames, links, truncates, chmod/chown) decided in user space"))
        << r.detail;
    EXPECT_TRUE(contains(r.detail, "path_* hooks: path_mknod: no bpf_path_d_path kfunc"))
        << r.detail;
  }
  EXPECT_TRUE(contains(row(rows, "backend").detail, "and write opens and path changes: path_*"))
      << row(rows, "backend").detail;
  EXPECT_EQ(row(rows, "exec_rules").backend, "bpf-lsm") << "bprm_check_security is required";
}

TEST(DoctorMatrixTest, BpfLsmFileRulesNeedUserNotifyForWhatItKeeps) {
  HostCaps c = bpfLsmHost();
  c.seccomp_notify = c.notify_addfd = false;
  c.why["seccomp_notify"] = "disabled by SUPERVISE_TEST_DISABLE";
  auto rows = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_FALSE(row(rows, "deny_globs").enforceable);
  EXPECT_EQ(row(rows, "deny_globs").detail,
            "seccomp user-notify: disabled by SUPERVISE_TEST_DISABLE");
  EXPECT_FALSE(fullyEnforceable(rows));
}

TEST(DoctorMatrixTest, AuditEventsNameBpfLsmUnderTheBpfLsmBackend) {
  auto local = featureMatrix(bpfLsmHost(), *loadPreset("code-sandbox"));
  EXPECT_EQ(row(local, "audit").backend, "bpf-lsm + seccomp-notify + cgroup-bpf");
  EXPECT_TRUE(contains(row(local, "audit").detail, "BPF LSM ring buffer")) << row(local, "audit").detail;
  auto all = featureMatrix(bpfLsmHost(), *loadPreset("code-sandbox", {"network.mode=all"}));
  EXPECT_EQ(row(all, "audit").backend, "bpf-lsm + seccomp-notify");

  // Active but not loadable (or loadable, not active): host, as before.
  HostCaps c = bpfLsmHost();
  c.bpf_lsm_active = false;
  auto host = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_EQ(row(host, "backend").backend, "host");
  EXPECT_EQ(row(host, "audit").backend, "seccomp-notify + cgroup-bpf");
  EXPECT_EQ(row(host, "deny_globs").backend, "seccomp-notify");
}

// Doctor's words for the 6.1 guest: one clause per reason, path hooks only.
TEST(DoctorMatrixTest, MissingPathHooksAreGroupedByReason) {
  const std::string refused = "bpf_d_path: helper call is not allowed in this hook";
  const std::vector<tracer::LsmHookMissing> missing = {
      {"path_mknod", "no bpf_path_d_path kfunc"},
      {"path_unlink", refused},
      {"path_mkdir", refused},
      {"socket_connect", "no such LSM hook in the kernel BTF"},
      {"path_chown", refused}};
  EXPECT_EQ(tracer::describeMissingPathHooks(missing),
            "path_mknod: no bpf_path_d_path kfunc; path_unlink, path_mkdir, path_chown: " + refused);
  EXPECT_EQ(tracer::describeMissingPathHooks({}), "");
}

// A session's matrix (its start event) from the hooks its LsmFilter attached.
TEST(DoctorMatrixTest, SessionCapsTakeThePathHooksFromTheAttachedHooks) {
  SessionSetup setup;
  setup.host.seccomp_notify = setup.host.notify_addfd = true;
  setup.seccomp_filter = true;
  setup.bpf_lsm = true;
  setup.lsm_hooks = {"file_open",   "bprm_check_security", "path_mknod",    "path_unlink",
                     "path_mkdir",  "path_rmdir",          "path_symlink",  "path_rename",
                     "path_link",   "path_truncate",       "path_chmod",    "path_chown"};
  EXPECT_TRUE(sessionHostCaps(setup).bpf_lsm_path_hooks);

  setup.lsm_hooks = {"file_open", "bprm_check_security", "path_link"};  // 6.1
  HostCaps c = sessionHostCaps(setup);
  EXPECT_FALSE(c.bpf_lsm_path_hooks);
  EXPECT_TRUE(contains(c.why["bpf_lsm_path_hooks"], "not loaded on this kernel: path_mknod, "
                                                     "path_unlink, path_mkdir"))
      << c.why["bpf_lsm_path_hooks"];
  auto rows = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_TRUE(contains(row(rows, "deny_globs").detail, "write opens and path changes"))
      << row(rows, "deny_globs").detail;

  setup.bpf_lsm = false;
  EXPECT_FALSE(sessionHostCaps(setup).bpf_lsm_path_hooks);
}

TEST(DoctorMatrixTest, MissingLandlockBlocksFileRootsWithTheProbeReason) {
  HostCaps c = fullHost();
  c.landlock_abi = 0;
  c.why["landlock"] = "unavailable (disabled by SUPERVISE_TEST_DISABLE)";
  auto rows = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_FALSE(fullyEnforceable(rows));
  const auto &r = row(rows, "file_roots");
  EXPECT_FALSE(r.enforceable);
  EXPECT_EQ(r.backend, "");
  EXPECT_NE(r.detail.find("Landlock: unavailable (disabled by SUPERVISE_TEST_DISABLE)"),
            std::string::npos)
      << r.detail;
}

TEST(DoctorMatrixTest, NetworkAllNeedsNoSocketHooks) {
  HostCaps c = fullHost();
  c.cgroup_sock_addr = false;
  c.bpf_ringbuf = false;
  c.why["cgroup_sock_addr"] = "BPF_PROG_LOAD cgroup/connect4: EPERM (Operation not permitted)";
  auto all = featureMatrix(c, *loadPreset("code-sandbox", {"network.mode=all"}));
  EXPECT_TRUE(fullyEnforceable(all));
  EXPECT_TRUE(row(all, "network.all").used);
  EXPECT_FALSE(row(all, "network.localhost").enforceable);
  EXPECT_FALSE(row(all, "network.localhost").used);

  auto local = featureMatrix(c, *loadPreset("code-sandbox"));
  EXPECT_FALSE(fullyEnforceable(local));
  EXPECT_NE(row(local, "network.localhost").detail.find("cgroup socket hooks: BPF_PROG_LOAD"),
            std::string::npos);
}

TEST(DoctorMatrixTest, NoSeccompNotifyBlocksEvenWithoutDenyGlobs) {
  HostCaps c = fullHost();
  c.seccomp_notify = c.notify_addfd = false;
  auto rows = featureMatrix(c, *loadPreset("none"));
  // The session always mediates write opens and execs through user-notify.
  EXPECT_FALSE(row(rows, "syscall_mediation").enforceable);
  EXPECT_FALSE(fullyEnforceable(rows));
}

TEST(DoctorMatrixTest, NetworkFilterNeedsTheRingBuffer) {
  HostCaps c = fullHost();
  c.bpf_ringbuf = false;
  c.why["ringbuf"] = "BPF_MAP_CREATE ringbuf: EPERM (Operation not permitted)";
  auto rows = featureMatrix(c, *loadPreset("code-sandbox", {"network.mode=none"}));
  EXPECT_FALSE(fullyEnforceable(rows));
  EXPECT_TRUE(row(rows, "network.none").used);
  EXPECT_FALSE(row(rows, "network.none").enforceable);
  EXPECT_EQ(row(rows, "network.none").detail,
            "BPF ring buffer: BPF_MAP_CREATE ringbuf: EPERM (Operation not permitted)");
}

TEST(DoctorMatrixTest, UnusedFeaturesDoNotBlock) {
  // exec rules and profiles unused by code-sandbox: a host without them is
  // still fine as long as what code-sandbox uses is there.
  auto p = loadPreset("code-sandbox");
  auto rows = featureMatrix(fullHost(), *p);
  EXPECT_FALSE(row(rows, "profiles").used);
  EXPECT_EQ(row(rows, "profiles").used, !p->profiles.empty());
  EXPECT_EQ(row(rows, "exec_rules").used,
            !p->exec.allow.empty() || !p->exec.deny.empty() || !p->exec.switches.empty());
}

// ---- discovery ----

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sv-doctor-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    for (const char *d : {"cwd", "xdg/supervise", "home/.config/supervise", "etc/supervise"})
      fs::create_directories(root_ / d);
    in_.cwd = root_ / "cwd";
    in_.xdg_config_home = root_ / "xdg";
    in_.home = root_ / "home";
    in_.etc_dir = root_ / "etc";
  }
  void TearDown() override { fs::remove_all(root_); }
  void touch(const fs::path &p) { std::ofstream(p) << "{}\n"; }

  fs::path root_;
  DiscoveryInput in_;
};

TEST_F(DiscoveryTest, OrderIsPolicyFlagCwdXdgEtcPreset) {
  std::string source;
  EXPECT_EQ(discoverPolicyFile(in_, &source), "");
  EXPECT_EQ(source, "default preset");

  touch(root_ / "etc/supervise/policy.json");
  EXPECT_EQ(discoverPolicyFile(in_, &source), root_ / "etc/supervise/policy.json");
  EXPECT_EQ(source, "/etc/supervise/policy.json");

  touch(root_ / "home/.config/supervise/policy.json");  // shadowed: XDG_CONFIG_HOME is set
  EXPECT_EQ(discoverPolicyFile(in_, &source), root_ / "etc/supervise/policy.json");

  touch(root_ / "xdg/supervise/policy.json");
  EXPECT_EQ(discoverPolicyFile(in_, &source), root_ / "xdg/supervise/policy.json");
  EXPECT_EQ(source, "$XDG_CONFIG_HOME/supervise/policy.json");

  touch(root_ / "cwd/.supervise.json");
  EXPECT_EQ(discoverPolicyFile(in_, &source), root_ / "cwd/.supervise.json");
  EXPECT_EQ(source, "./.supervise.json");

  in_.explicit_file = "/nonexistent/p.json";  // returned as is; loading reports ENOENT
  EXPECT_EQ(discoverPolicyFile(in_, &source), "/nonexistent/p.json");
  EXPECT_EQ(source, "--policy");
}

TEST_F(DiscoveryTest, XdgUnsetOrRelativeFallsBackToHomeConfig) {
  touch(root_ / "home/.config/supervise/policy.json");
  std::string source;
  in_.xdg_config_home = "";
  EXPECT_EQ(discoverPolicyFile(in_, &source), root_ / "home/.config/supervise/policy.json");
  EXPECT_EQ(source, "$XDG_CONFIG_HOME/supervise/policy.json");
  in_.xdg_config_home = "relative/dir";  // invalid per the XDG spec: ignored
  EXPECT_EQ(discoverPolicyFile(in_, &source), root_ / "home/.config/supervise/policy.json");
}

TEST_F(DiscoveryTest, DirectoryNamedLikeThePolicyIsNotAPolicy) {
  fs::create_directories(root_ / "cwd/.supervise.json");
  std::string source;
  EXPECT_EQ(discoverPolicyFile(in_, &source), "");
  EXPECT_EQ(source, "default preset");
}

// ---- this host ----

std::string needsRoot() { return geteuid() == 0 ? "" : "euid " + std::to_string(geteuid()); }

const Check *check(const HostReport &r, const std::string &id) {
  for (const auto &c : r.checks)
    if (c.id == id) return &c;
  return nullptr;
}

TEST(DoctorHostTest, ProbesSeccompLandlockSocketHooksAndBpfLsm) {
  if (auto why = needsRoot(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  HostReport r = probeDoctorHost();
  if (!r.caps.seccomp_notify)
    GTEST_SKIP() << "needs seccomp-notify: " << r.caps.why["seccomp_notify"];
  EXPECT_TRUE(r.caps.notify_addfd);
  ASSERT_GT(r.caps.landlock_abi, 0) << r.caps.why["landlock"];
  EXPECT_NE(std::find(r.landlock_fs_rights.begin(), r.landlock_fs_rights.end(), "READ_FILE"),
            r.landlock_fs_rights.end());
  EXPECT_TRUE(r.caps.cgroup_writable) << r.caps.why["cgroup"];
  EXPECT_TRUE(r.caps.cgroup_sock_addr) << r.caps.why["cgroup_sock_addr"];
  EXPECT_TRUE(r.caps.bpf_ringbuf);
  ASSERT_NE(check(r, "kernel"), nullptr);
  ASSERT_NE(check(r, "lockdown"), nullptr);
  ASSERT_NE(check(r, "ptrace_scope"), nullptr);
  const Check *lsm = check(r, "bpf.lsm_loadable");
  ASSERT_NE(lsm, nullptr);
  if (r.caps.bpf_lsm_loadable) {
    EXPECT_EQ(lsm->detail, "lsm/file_open loaded and attached");
  } else {
    // Precise: which step the kernel refused, with the errno name (EPERM on the
    // dev hosts).
    EXPECT_TRUE(std::regex_search(
        lsm->detail, std::regex(R"((BPF_PROG_LOAD|attach) lsm/file_open: E[A-Z]+ \()")))
        << lsm->detail;
    EXPECT_EQ(lsm->state, CheckState::Missing);
  }
  // The path_* hooks are asked only where an LSM program loads (the
  // bpf_d_path probe cannot tell a refusal from EPERM otherwise).
  const Check *paths = check(r, "bpf.lsm_path_hooks");
  ASSERT_NE(paths, nullptr);
  if (!r.caps.bpf_lsm_loadable) {
    EXPECT_EQ(paths->value, "n/a");
    EXPECT_FALSE(r.caps.bpf_lsm_path_hooks);
  } else {
    EXPECT_EQ(paths->value, r.caps.bpf_lsm_path_hooks ? "yes" : "no") << paths->detail;
  }
}

struct CliRun {
  int exit_code = -1;
  std::string out;
};

// Runs `supervise <args>` in `dir` with a clean discovery environment.
CliRun runSupervise(const std::string &dir, const std::string &env, const std::string &args) {
  std::string cmd = "cd '" + dir + "' && env -u SUPERVISE_PRESET -u SUPERVISE_TEST_DISABLE " + env +
                    " " + SUPERVISE_BIN + " " + args + " 2>&1";
  CliRun r;
  FILE *f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) r.out.append(buf, n);
  int status = pclose(f);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class DoctorBinaryTest : public DiscoveryTest {
 protected:
  std::string env() const { return "XDG_CONFIG_HOME='" + (root_ / "xdg").string() + "'"; }
  std::string cwd() const { return (root_ / "cwd").string(); }
};

TEST_F(DoctorBinaryTest, DefaultPresetIsFullyEnforceableHere) {
  if (auto why = needsRoot(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  CliRun r = runSupervise(cwd(), env(), "doctor");
  if (r.exit_code == 1) GTEST_SKIP() << "needs a fully capable host: " << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("is fully enforceable on this host"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  ok +Landlock +ABI \d+)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  ok +file roots +used +landlock)")))
      << r.out;
}

// Without Landlock the mount namespace is the floor; without either, the
// roots can't be enforced and doctor says why.
TEST_F(DoctorBinaryTest, LandlockDisabledExitsOneAndSaysWhy) {
  if (auto why = needsRoot(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  CliRun floor = runSupervise(cwd(), env() + " SUPERVISE_TEST_DISABLE=landlock", "doctor");
  EXPECT_TRUE(std::regex_search(floor.out, std::regex(R"(\n  ok +filesystem floor +mount namespace)")))
      << floor.out;
  EXPECT_TRUE(std::regex_search(floor.out, std::regex(R"(\n  ok +file roots +used +mountns )")))
      << floor.out;
  CliRun r = runSupervise(cwd(), env() + " SUPERVISE_TEST_DISABLE=landlock,mountns", "doctor");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("is NOT fully enforceable on this host:\n  file roots: Landlock: "
                       "unavailable (disabled by SUPERVISE_TEST_DISABLE)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  missing +Landlock +no)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  missing +filesystem floor +none)"))) << r.out;
}

// doctor names what the preset derives from this environment: the home rules
// and the variables it strips (names only, never values).
TEST_F(DoctorBinaryTest, ShowsTheStrippedVariablesByNameOnly) {
  if (auto why = needsRoot(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  CliRun r = runSupervise(cwd(), env() + " GITHUB_TOKEN=ghp_doctor_value", "doctor --json");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out;
  EXPECT_EQ(r.out.find("ghp_doctor_value"), std::string::npos) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.contains("home")) << r.out;
  ASSERT_TRUE(j["environment"]["applied"].get<bool>()) << r.out;
  bool stripped = false;
  for (const auto &e : j["environment"]["removed"])
    stripped |= e["name"] == "GITHUB_TOKEN" && e["rule"] == "env-secret:github-token";
  EXPECT_TRUE(stripped) << j["environment"].dump();
  CliRun text = runSupervise(cwd(), env() + " GITHUB_TOKEN=ghp_doctor_value", "doctor");
  EXPECT_NE(text.out.find("\n  GITHUB_TOKEN "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("ghp_doctor_value"), std::string::npos) << text.out;
}

TEST_F(DoctorBinaryTest, JsonParsesAndHasTheKeys) {
  if (auto why = needsRoot(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  CliRun r = runSupervise(cwd(), env(), "doctor --json");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  for (const char *k :
       {"schema_version", "host", "checks", "policy", "features", "fully_enforceable"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char *k :
       {"seccomp_notify", "notify_addfd", "notify_sync_wakeup", "landlock_abi",
        "landlock_fs_rights", "cgroup2", "cgroup2_mount", "cgroup2_mounted_by_supervise",
        "cgroup_writable", "cgroup_kill", "cgroup_sock_addr",
        "bpf_ringbuf", "bpf_tracepoint", "bpf_lsm_active", "bpf_lsm_loadable",
        "bpf_lsm_path_hooks", "lsms"})
    EXPECT_TRUE(j["host"].contains(k)) << k;
  EXPECT_EQ(j["fully_enforceable"].get<bool>(), r.exit_code == 0);
  // The binary looks at the real /etc; the temp cwd and XDG dir hold no policy.
  if (!fs::exists("/etc/supervise/policy.json")) {
    EXPECT_EQ(j["policy"]["source"], "default preset");
  }
  EXPECT_EQ(j["policy"]["network"], "localhost");
  bool saw_roots = false;
  for (const auto &f : j["features"]) {
    for (const char *k : {"id", "label", "used", "enforceable", "backend", "detail"})
      EXPECT_TRUE(f.contains(k)) << k;
    if (f["id"] == "file_roots") {
      saw_roots = true;
      if (j["host"]["landlock_abi"].get<int>() > 0) {
        EXPECT_EQ(f["backend"], "landlock");
      }
    }
  }
  EXPECT_TRUE(saw_roots);

  CliRun off = runSupervise(cwd(), env() + " SUPERVISE_TEST_DISABLE=landlock,mountns",
                            "doctor --json");
  EXPECT_EQ(off.exit_code, 1) << off.out;
  nlohmann::json k = nlohmann::json::parse(off.out, nullptr, false);
  ASSERT_FALSE(k.is_discarded()) << off.out;
  EXPECT_FALSE(k["fully_enforceable"].get<bool>());
  EXPECT_EQ(k["host"]["landlock_abi"], 0);
}

// Needs no privileges: discovery and loading only; the engines column just
// reports whatever the probes find.
TEST_F(DoctorBinaryTest, StatusNamesTheWinningPolicyFile) {
  std::ofstream(root_ / "xdg/supervise/policy.json") << R"({"network": {"mode": "none"}})"
                                                        "\n";
  CliRun xdg = runSupervise(cwd(), env(), "status");
  EXPECT_EQ(xdg.exit_code, 0) << xdg.out;
  EXPECT_NE(xdg.out.find("source     $XDG_CONFIG_HOME/supervise/policy.json"), std::string::npos)
      << xdg.out;
  EXPECT_NE(xdg.out.find("network    none\n"), std::string::npos) << xdg.out;

  std::ofstream(root_ / "cwd/.supervise.json") << R"({"mode": "audit"})"
                                                  "\n";
  CliRun here = runSupervise(cwd(), env(), "status");
  EXPECT_EQ(here.exit_code, 0) << here.out;
  EXPECT_NE(here.out.find("source     ./.supervise.json"), std::string::npos) << here.out;
  EXPECT_NE(here.out.find("file       " + (root_ / "cwd/.supervise.json").string()),
            std::string::npos)
      << here.out;
  EXPECT_NE(here.out.find("mode       audit\n"), std::string::npos) << here.out;
  EXPECT_NE(here.out.find("network    localhost\n"), std::string::npos) << here.out;

  CliRun flag = runSupervise(
      cwd(), env(),
      "status --preset strict --policy '" + (root_ / "xdg/supervise/policy.json").string() + "'");
  EXPECT_EQ(flag.exit_code, 0) << flag.out;
  EXPECT_NE(flag.out.find("source     --policy"), std::string::npos) << flag.out;
  EXPECT_NE(flag.out.find("preset     strict\n"), std::string::npos) << flag.out;

  CliRun json = runSupervise(cwd(), env(), "status --json");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  nlohmann::json j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["policy"]["source"], "./.supervise.json");
  EXPECT_EQ(j["policy"]["mode"], "audit");
  EXPECT_EQ(j["workspace"], cwd());
  EXPECT_TRUE(j["features"].is_array());

  std::ofstream(root_ / "cwd/.supervise.json") << R"({"bogus": 1})"
                                                  "\n";
  CliRun bad = runSupervise(cwd(), env(), "status");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find(".supervise.json:"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace sv::supervisor
