// The cross-backend differential (issue 24): the same policy means the same
// thing on every backend. A seeded list of requests (generator.h) is run by
// run_requests under `supervise --backend B`; every request's verdict (from
// its errno) and every decision event's rule (from the audit file) must be
// what policy::Engine::decide says (expected.h). Prints the counts per
// backend and every difference with its request.
//
//   SV_DIFFERENTIAL_REQUESTS=N   requests per backend (default 100000)
//   SV_DIFFERENTIAL_ERRNO_REQUESTS=N  the host vs ptrace errno test's (20000)
//   SV_DIFFERENTIAL_SEED=S       generator seed (default 24)
//   SV_DIFFERENTIAL_KEEP=1       keep the fixture (its meta/ has the policy,
//                                the request list, outcomes and audit file)
//   SV_SCRATCH_DIR=DIR           where the fixture goes (default /tmp; the
//                                VM guest's tmpfs, set by tools/vm/run)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "policy/load.h"
#include "tests/common/host_features.h"
#include "tests/common/run_command.h"
#include "tests/differential/compare.h"
#include "tests/differential/expected.h"
#include "tests/differential/fixture.h"
#include "tests/differential/generator.h"
#include "tests/differential/observed.h"
#include "tests/integration/lsm/lsm_test_util.h"

namespace sv::differential {
namespace {

constexpr const char* kSupervise = SV_SUPERVISE_BIN;
constexpr const char* kRunner = SV_DIFFERENTIAL_RUNNER;

size_t envNumber(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoul(v, nullptr, 10) : fallback;
}

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// The differences between the engine and a backend that are understood, each
// with its reason (README.md, "Known differences").
std::vector<KnownDifference> knownDifferences(const std::string& backend, const Fixture& f) {
  const std::string by_string =
      "the cgroup connect_unix program judges the path string against the writable roots "
      "(docs/network.md, \"Unix sockets\"); the engine, like bpf-lsm, judges a write of the "
      "socket reached";
  const std::string relative = "a relative path is refused outright (step 3): " + by_string;
  // The cgroup programs run first under every backend.
  std::vector<KnownDifference> known = {{"unix sock", relative}, {"unix link-out/sock", relative}};
  if (backend == "bpf-lsm") return known;
  const std::string loader =
      "exec.allow has no pattern for the dynamic loader: Landlock grants EXECUTE only below the "
      "allow list's directories, so the kernel refuses to map /lib64/ld-linux-x86-64.so.2 for a "
      "dynamically linked program the engine allows (docs/policy.md recommends /usr/lib/** in "
      "the allow list); the engine and bpf-lsm judge the program only";
  known.insert(known.end(),
               {{"unix " + f.workspace() + "/link-out/sock",
                 "a symlink in the workspace to a socket outside is allowed by its own path "
                 "(known escape 6, docs/escape.md): " +
                     by_string},
                {"unix " + f.workspace() + "/.env.sock",
                 "the deny globs do not apply to sockets, only the writable roots: " + by_string},
                {"exec /usr/bin/true", loader},
                {"exec /bin/true", loader},
                {"exec link-true", loader},
                {"ld-linux", loader}});
  return known;
}

// The policy as the session loads it (supervisor/cli/policy_args.cpp,
// makeLoadRequest): the file over preset "none", the workspace, and the
// paths the session protects from the tree.
std::shared_ptr<const policy::Policy> loadAsTheSessionDoes(const Fixture& f,
                                                           const std::string& policy_file,
                                                           const std::string& audit_file) {
  policy::LoadRequest req;
  req.preset = "none";
  req.files.push_back({policy_file, f.policyJson()});
  req.workspace = f.workspace();
  req.home = std::getenv("HOME") ? std::getenv("HOME") : "/root";
  req.self_protect = {{"policy-file", policy_file, "", false},
                      {"audit-file", audit_file, "", false},
                      {"binary", realPath(kSupervise), "", false},
                      {"bpf-pins", "/sys/fs/bpf/supervise", "", false},
                      {"runtime-state", "/run/supervise", "", false}};
  policy::LoadResult res = policy::load(req);
  for (const auto& d : res.diagnostics) ADD_FAILURE() << d.format();
  return res.policy;
}

// One backend's run of the request list on a fixture of its own.
struct BackendRun {
  std::vector<std::string> requests;  // as text, the fixture root written "$ROOT"
  std::vector<int> outcomes;
  Comparison comparison;
};

std::string withRootAsVariable(std::string text, const std::string& root) {
  for (size_t at; (at = text.find(root)) != std::string::npos;)
    text.replace(at, root.size(), "$ROOT");
  return text;
}

// Generates the requests, asks the engine, runs them under `backend`, and
// compares. Fatal failures (ASSERT) leave `out` incomplete.
void runBackend(const std::string& backend, size_t count, BackendRun* out) {
  // Not on the guest's virtiofs (milliseconds per file operation under TCG).
  const char* scratch = std::getenv("SV_SCRATCH_DIR");
  auto fixture = Fixture::create(kRunner, scratch && *scratch ? scratch : "/tmp");
  ASSERT_TRUE(fixture) << fixture.error().message();
  const Fixture& f = *fixture;
  const std::string policy_file = f.meta() + "/policy.json", audit_file = f.meta() + "/audit.jsonl",
                    requests_file = f.meta() + "/requests.txt";
  std::ofstream(policy_file) << f.policyJson();

  const auto requests =
      generateRequests(static_cast<uint32_t>(envNumber("SV_DIFFERENTIAL_SEED", 24)), count, f);
  {
    std::ofstream list(requests_file);
    list << "dirs";
    for (const auto& d : f.dirfdTable()) list << " " << d;
    list << "\n";
    for (const auto& r : requests) list << format(r) << "\n";
  }

  // The expected side, asked before the run: the oracle resolves paths on
  // the tree as the requests find it.
  auto policy = loadAsTheSessionDoes(f, policy_file, audit_file);
  ASSERT_TRUE(policy);
  const policy::Engine engine(policy);
  const Oracle oracle(engine, f);
  std::vector<Expectation> expected;
  expected.reserve(requests.size());
  for (const auto& r : requests) expected.push_back(oracle.expect(r));
  const std::string command = f.workspace() + "/tools/ok-prog";
  const std::vector<EventKey> extra = {{"exec " + command, "allow", "workspace-tools"}};

  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "/root";
  test::CommandOptions o;
  o.cwd = f.workspace();
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + home};
  // A request the backend never answers must fail the test, not hang it:
  // 120 s per 100,000 requests (they take 10-30 s here), ten times that in
  // a TCG guest (100,000 under bpf-lsm: ~200 s there).
  const bool in_guest = std::getenv("SV_IN_VM") != nullptr;
  o.timeout = std::chrono::seconds(120 * std::max<size_t>(1, (count + 99999) / 100000) *
                                   (in_guest ? 10 : 1));
  auto run = test::runCommand(
      {kSupervise, "--backend", backend, "--preset", "none", "--policy", policy_file, "--quiet",
       "--audit-file", audit_file, "--", command, requests_file},
      f.meta() + "/run", o);
  // Not the whole stdout (a line per request): over a guest's serial
  // console a megabyte takes minutes.
  ASSERT_EQ(run.status, 0) << "status=" << run.status << (run.timed_out ? " (TIMED OUT)" : "")
                           << "\n--- stderr ---\n" << run.err << "--- stdout, the end ---\n"
                           << run.out.substr(run.out.size() - std::min<size_t>(run.out.size(), 2000));

  auto outcomes = readOutcomes(f.meta() + "/run.out");
  ASSERT_TRUE(outcomes) << outcomes.error().message();
  auto trail = readAuditTrail(audit_file);
  ASSERT_TRUE(trail) << trail.error().message();

  CompareOptions options;
  options.known = knownDifferences(backend, f);
  if (backend == "bpf-lsm") {
    // The LSM's events are shaped otherwise (one per hook, no path2), and
    // its hooks run after the kernel's lookup: the verdicts of the calls
    // that reached a hook, and the rules of the denials.
    options.events = CompareOptions::Events::DenialRules;
    options.undecided = {ENOENT, EEXIST};
  }
  out->comparison = compare(requests, expected, *outcomes, *trail, extra, options);
  const Comparison& c = out->comparison;
  for (const auto& line : c.lines)
    std::printf("%s: %s\n", backend.c_str(), withRootAsVariable(line, f.root()).c_str());
  std::string enforcers;
  for (const auto& [by, n] : trail->enforced_by) enforcers += " " + by + "=" + std::to_string(n);
  std::printf(
      "differential %s: %zu requests, %zu allowed, %zu denied, %zu undecided, %zu differences "
      "(%zu known); %s; enforced_by:%s\n",
      backend.c_str(), c.requests, c.allowed, c.denied, c.undecided, c.differences, c.known,
      options.events == CompareOptions::Events::DenialRules
          ? (std::to_string(c.denial_rules) + " distinct (subject, rule) denials compared").c_str()
          : (std::to_string(c.events_compared) + " events compared, " +
             std::to_string(c.events_ignored) + " ignored")
                .c_str(),
      enforcers.c_str());
  for (const auto& r : requests) out->requests.push_back(withRootAsVariable(format(r), f.root()));
  out->outcomes = std::move(*outcomes);
}

class Differential : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const bool lsm = GetParam() == "bpf-lsm";
    if (std::string missing = test::missingSessionFeature(kSupervise); !missing.empty()) {
      if (lsm && lsm_test::requireLsm()) FAIL() << "SV_REQUIRE_BPF_LSM=1 but " << missing;
      GTEST_SKIP() << missing;
    }
    // Loading LSM programs fails here (EPERM); the vm_bpf_lsm test runs this
    // one in a guest kernel, with SV_REQUIRE_BPF_LSM=1.
    if (lsm && !lsm_test::lsmProbe().first) {
      if (lsm_test::requireLsm())
        FAIL() << "SV_REQUIRE_BPF_LSM=1 but the BPF LSM is unusable: "
               << lsm_test::lsmProbe().second;
      GTEST_SKIP() << "needs the BPF LSM: " << lsm_test::lsmProbe().second;
    }
  }
};

TEST_P(Differential, EveryRequestIsDecidedAsTheEngineDecidesIt) {
  BackendRun run;
  ASSERT_NO_FATAL_FAILURE(
      runBackend(GetParam(), envNumber("SV_DIFFERENTIAL_REQUESTS", 100000), &run));
  const Comparison& c = run.comparison;
  EXPECT_EQ(c.differences, 0u) << "see the DIFFERENCE lines above";
  // Both outcomes must be well represented, or the run proves little.
  EXPECT_GT(c.allowed, c.requests / 5);
  EXPECT_GT(c.denied, c.requests / 5);
}

INSTANTIATE_TEST_SUITE_P(Backends, Differential, testing::Values("host", "ptrace", "bpf-lsm"),
                         [](const auto& info) {  // test names take no '-'
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Errnos the host and ptrace backends give differently for the same request,
// with the reason. None today: the O_PATH opens that differed (the host
// backend could not answer them) stay in the kernel on both.
std::vector<KnownDifference> knownErrnoDifferences() { return {}; }

// Beyond the verdict: the same request fails with the same errno on both
// backends that share the user-notify handler (a smaller list: the verdicts
// are the test above's).
TEST(DifferentialErrno, HostAndPtraceFailEveryRequestWithTheSameErrno) {
  if (std::string missing = test::missingSessionFeature(kSupervise); !missing.empty())
    GTEST_SKIP() << missing;
  const size_t count = envNumber("SV_DIFFERENTIAL_ERRNO_REQUESTS", 20000);
  BackendRun host, ptrace;
  ASSERT_NO_FATAL_FAILURE(runBackend("host", count, &host));
  ASSERT_NO_FATAL_FAILURE(runBackend("ptrace", count, &ptrace));
  ASSERT_EQ(host.requests, ptrace.requests);
  ASSERT_EQ(host.outcomes.size(), ptrace.outcomes.size());
  std::map<std::tuple<std::string, int, int>, size_t> distinct;  // -> count
  for (size_t i = 0; i < host.outcomes.size(); ++i)
    if (host.outcomes[i] != ptrace.outcomes[i])
      ++distinct[{host.requests[i], host.outcomes[i], ptrace.outcomes[i]}];
  size_t unexplained = 0, known = 0;
  const auto knowns = knownErrnoDifferences();
  for (const auto& [key, n] : distinct) {
    const auto& [text, host_errno, ptrace_errno] = key;
    const KnownDifference* k = nullptr;
    for (const auto& d : knowns)
      if (text.find(d.match) != std::string::npos) k = &d;
    ++(k ? known : unexplained);
    std::printf("%s: '%s' (x%zu): host %s, ptrace %s%s\n", k ? "known" : "DIFFERENCE", text.c_str(),
                n, strerrorname_np(host_errno) ? strerrorname_np(host_errno) : "0",
                strerrorname_np(ptrace_errno) ? strerrorname_np(ptrace_errno) : "0",
                k ? ("\n    because " + k->reason).c_str() : "");
  }
  std::printf("errnos host vs ptrace: %zu requests, %zu distinct differences (%zu known)\n",
              host.outcomes.size(), unexplained + known, known);
  EXPECT_EQ(unexplained, 0u) << "see the DIFFERENCE lines above";
}

}  // namespace
}  // namespace sv::differential
