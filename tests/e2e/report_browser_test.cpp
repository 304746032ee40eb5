// The HTML page of `supervise report` in a real browser: Debian's chromium,
// headless, renders it (screenshot) and dumps the DOM; the counts must be in
// the DOM and the console must stay clean (no CSP violation, no fetch, no
// error). Skips, saying so, where chromium is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/common/run_command.h"

namespace {

std::string findChromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

TEST(ReportBrowser, RendersWithTheCountsAndNoConsoleErrors) {
  const std::string chromium = findChromium();
  if (chromium.empty()) GTEST_SKIP() << "needs chromium (apt-get install chromium): not found";
  char tmpl[] = "/tmp/sv-report-browser-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, data = SV_REPORT_DATA;
  sv::test::CommandOptions o;
  o.cwd = dir;
  auto r = sv::test::runCommand({SV_SUPERVISE_BIN, "report", data + "/native.jsonl",
                                 data + "/ocsf.jsonl", data + "/ecs.jsonl", "--html",
                                 dir + "/report.html"},
                                dir + "/report", o, [](pid_t) {});
  ASSERT_EQ(r.status, 0) << r.describe();
  const std::vector<std::string> common = {chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                           "--user-data-dir=" + dir + "/profile",
                                           "--enable-logging=stderr", "--v=0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = common;
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("file://" + dir + "/report.html");
    return argv;
  };
  auto dom = sv::test::runCommand(with({"--dump-dom"}), dir + "/dom", o, [](pid_t) {});
  ASSERT_EQ(dom.status, 0) << dom.describe();
  EXPECT_NE(dom.out.find("<td class=\"n\" id=\"decisions\">30</td>"), std::string::npos) << dom.out;
  EXPECT_NE(dom.out.find("<td class=\"n\" id=\"deny\">3</td>"), std::string::npos);
  EXPECT_NE(dom.out.find("<td class=\"n\" id=\"sessions\">3</td>"), std::string::npos);
  EXPECT_NE(dom.out.find("deny-write-env"), std::string::npos);
  EXPECT_NE(dom.out.find("<svg"), std::string::npos);
  // Console messages and page errors appear as CONSOLE(...) / "Uncaught" lines.
  EXPECT_EQ(dom.err.find("CONSOLE"), std::string::npos) << dom.err;
  EXPECT_EQ(dom.err.find("Content Security Policy"), std::string::npos) << dom.err;
  EXPECT_EQ(dom.err.find("Uncaught"), std::string::npos) << dom.err;

  const std::string png = dir + "/report.png";
  auto shot = sv::test::runCommand(with({"--screenshot=" + png, "--window-size=1280,2000",
                                         "--hide-scrollbars"}),
                                   dir + "/shot", o, [](pid_t) {});
  ASSERT_EQ(shot.status, 0) << shot.describe();
  ASSERT_TRUE(std::filesystem::exists(png)) << shot.describe();
  EXPECT_GT(std::filesystem::file_size(png), 10000u);
  if (const char* keep = std::getenv("SV_REPORT_SCREENSHOT")) std::filesystem::copy_file(
      png, keep, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove_all(dir);
}

}  // namespace
