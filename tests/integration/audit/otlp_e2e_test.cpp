// End to end: `supervise --audit-otlp URL` over a command that makes
// decisions (allowed opens, a denied write) against otlp_receiver.py, which
// validates every request against the OTLP JSON mapping of logs.proto. The
// receiver gets the session start, every decision and the session end, each
// log record's body byte for byte the line a file sink of the same run has,
// in seq order, with severity and attributes from the event.
// Needs root and a host supervise can enforce on (skips otherwise).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/audit/otlp_receiver.h"

namespace {

using nlohmann::json;

std::vector<std::string> fileLines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

class OtlpE2E : public testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: euid " << geteuid();
    char tmpl[] = "/tmp/sv-otlp-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
};

TEST_F(OtlpE2E, SessionStartDecisionsAndEndArriveValidAndInOrder) {
  sv::test::OtlpReceiver rx(dir_, {});
  ASSERT_TRUE(rx.start());
  const std::string cmd = "cd " + dir_ + " && " + SUPERVISE_BIN +
                          " --quiet --audit-file audit.jsonl --audit-otlp " + rx.url() +
                          " -- sh -c 'for i in $(seq 300); do cat /etc/hostname >/dev/null; done; "
                          "echo x > /etc/sv-otlp-e2e-denied 2>/dev/null; exit 0' >/dev/null 2>" +
                          dir_ + "/stderr";
  const int st = std::system(cmd.c_str());
  const int status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on (exit 125)";
  ASSERT_EQ(status, 0) << std::ifstream(dir_ + "/stderr").rdbuf();

  const auto file = fileLines(dir_ + "/audit.jsonl");
  const auto records = rx.records();
  for (const auto& r : rx.requests()) EXPECT_TRUE(r["error"].is_null()) << r.dump();
  ASSERT_GT(file.size(), 3u);
  ASSERT_EQ(records.size(), file.size()) << "every event, once";
  bool denied = false;
  for (size_t i = 0; i < file.size(); ++i) {
    EXPECT_EQ(records[i]["body"], file[i]) << "record " << i << ": the body is the event's line";
    const json ev = json::parse(file[i]);
    EXPECT_EQ(records[i]["attributes"]["supervise.seq"], std::to_string(ev["seq"].get<uint64_t>()));
    if (ev.value("decision", "") == "deny") {
      denied = true;
      EXPECT_EQ(records[i]["severityNumber"], 13);
      EXPECT_EQ(records[i]["attributes"]["supervise.decision"], "deny");
    }
  }
  EXPECT_EQ(records.front()["event"]["operation"], "start");
  EXPECT_EQ(records.back()["event"]["operation"], "end");
  EXPECT_TRUE(denied) << "the write to /etc was denied and reported";
}

}  // namespace
