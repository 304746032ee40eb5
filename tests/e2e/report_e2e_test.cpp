// `supervise report` on the trail of real sessions: two runs of the real
// binary append to one audit file (native), a third writes OCSF and a fourth
// ECS; the report's counts must be what the sessions did.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/common/run_command.h"

namespace {

using sv::test::runCommand;

struct ReportE2E : ::testing::Test {
  std::string dir;
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: supervised runs";
    char tmpl[] = "/tmp/sv-report-e2e-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  sv::test::CommandResult run(const std::vector<std::string>& argv) {
    sv::test::CommandOptions o;
    o.cwd = dir;
    return runCommand(argv, dir + "/cmd", o, [](pid_t) {});
  }
};

TEST_F(ReportE2E, CountsWhatTheSessionsDid) {
  const std::string bin = SV_SUPERVISE_BIN;
  for (const char* fmt : {"native", "native", "ocsf", "ecs"}) {
    const std::string file = dir + "/" + (std::string(fmt) == "native" ? "audit" : fmt) + ".jsonl";
    auto r = run({bin, "--audit-file", file, "-o", std::string("audit.format=") + fmt, "--", "sh",
                  "-c", "echo x > .env; echo y > .env.local; echo ok > ok.txt; exit 3"});
    ASSERT_EQ(r.status, 3) << r.describe();
  }
  auto r = run({bin, "report", dir + "/audit.jsonl", dir + "/ocsf.jsonl", dir + "/ecs.jsonl",
                "--html", dir + "/report.html"});
  ASSERT_EQ(r.status, 0) << r.describe();
  // 4 sessions, 2 denials each: .env (deny-write-env), .env.local (deny-write-env-variants).
  EXPECT_NE(r.out.find(", 4 session(s), "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 8 deny, 0 would-deny"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("       4  deny-write-env: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("       4  deny-write-env-variants: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/.env.local"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("malformed"), std::string::npos) << r.out;
  size_t exits = 0;
  for (size_t at = 0; (at = r.out.find("exit 3  (", at)) != std::string::npos; ++at) ++exits;
  EXPECT_EQ(exits, 4u) << r.out;
  const std::string html = sv::test::slurp(dir + "/report.html");
  EXPECT_NE(html.find("<td class=n id=\"deny\">8</td>"), std::string::npos);
  EXPECT_NE(html.find("supervise explain --audit-file " + dir + "/audit.jsonl "), std::string::npos);

  // A malformed line in the middle is counted, the rest still reported.
  {
    std::ofstream(dir + "/audit.jsonl", std::ios::app) << "{not json\n";
  }
  r = run({bin, "report", dir + "/audit.jsonl", "-"});
  EXPECT_EQ(r.status, 0) << r.describe();
  EXPECT_NE(r.out.find("malformed: 1 line(s) skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 4 deny, "), std::string::npos) << r.out;
  r = run({bin, "report", dir + "/missing.jsonl"});
  EXPECT_EQ(r.status, 2) << r.describe();
}

}  // namespace
