// The Kafka sink through the real binary: this process runs librdkafka's mock
// cluster, `supervise --audit-kafka BOOTSTRAPS/audit` runs a small command,
// and a consumer reads the topic back: the session start, the decisions
// (audit.level all, so the read of /etc/hostname is one too) and
// the session end, valid JSON keyed by the session id, seq gap-free and the
// same lines a file sink of the same run got. A librdkafka property it does
// not know stops the start with a message naming it (exit 125).
// Needs root and seccomp user-notify; skips otherwise.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/run_command.h"
#include "tests/unit/audit/kafka_mock.h"

namespace {

using nlohmann::json;
using sv::test::slurp;

class KafkaE2E : public testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: euid " << geteuid();
    if (!kafka_.ok()) GTEST_SKIP() << "needs librdkafka's mock cluster";
    char tmpl[] = "/tmp/sv-kafka-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  // std::system: the mock cluster's threads go on serving while we wait.
  int run(const std::string& options) {
    const std::string cmd = "cd " + dir_ + " && " + SUPERVISE_BIN + " --quiet " + options +
                            " -- /bin/sh -c 'echo x > a; cat /etc/hostname >/dev/null'"
                            " >/dev/null 2>" + dir_ + "/stderr";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::string stderrText() { return slurp(dir_ + "/stderr"); }

  sv::test::MockKafka kafka_{"audit", 2};
  std::string dir_;
};

TEST_F(KafkaE2E, SessionStartDecisionsAndEndArriveInOrder) {
  const int status =
      run("-o audit.level=all --audit-file audit.jsonl --audit-kafka " + kafka_.bootstraps() + "/audit");
  if (status == 125) GTEST_SKIP() << "needs a host supervise can enforce on: " << stderrText();
  ASSERT_EQ(status, 0) << stderrText();
  std::vector<std::string> file;
  {
    std::istringstream in(slurp(dir_ + "/audit.jsonl"));
    for (std::string l; std::getline(in, l);) file.push_back(l);
  }
  ASSERT_GE(file.size(), 3u);
  const auto records = sv::test::consumeAll(kafka_.bootstraps(), "audit", 2, file.size());
  ASSERT_EQ(records.size(), file.size()) << "as many records as the file sink got";
  const std::string session = json::parse(file.front())["session_id"];
  bool wrote_a = false, read_hostname = false;
  for (size_t i = 0; i < records.size(); ++i) {
    const json j = json::parse(records[i].value, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << records[i].value;
    EXPECT_EQ(records[i].key, session);
    EXPECT_EQ(j["seq"], i + 1) << "gap-free, in order";
    EXPECT_EQ(j, json::parse(file[i])) << "the same event as the file sink's line";
    const std::string path = j.contains("file") ? j["file"].value("path", "") : "";
    if (path == dir_ + "/a") wrote_a = true;
    if (path == "/etc/hostname") read_hostname = true;
  }
  const json first = json::parse(records.front().value), last = json::parse(records.back().value);
  EXPECT_EQ(first["category"], "session");
  EXPECT_EQ(first["operation"], "start");
  EXPECT_EQ(last["category"], "session");
  EXPECT_EQ(last["operation"], "end");
  EXPECT_EQ(last["session"]["counters"]["dropped"], 0);
  EXPECT_TRUE(wrote_a) << "the write of $WS/a";
  EXPECT_TRUE(read_hostname) << "the read of /etc/hostname";
  EXPECT_EQ(stderrText().find("kafka"), std::string::npos) << stderrText();
}

TEST_F(KafkaE2E, AnUnknownLibrdkafkaOptionStopsTheStart) {
  const json sink = {{"type", "kafka"},
                     {"brokers", kafka_.bootstraps()},
                     {"topic", "audit"},
                     {"options", {{"no.such.property", "1"}}}};
  const int status = run("-o 'audit.sinks+=" + sink.dump() + "'");
  const std::string err = stderrText();
  if (status == 125 && err.find("no.such.property") == std::string::npos)
    GTEST_SKIP() << "needs a host supervise can enforce on: " << err;
  EXPECT_EQ(status, 125) << err;
  EXPECT_NE(err.find("option no.such.property"), std::string::npos) << err;
  EXPECT_FALSE(std::ifstream(dir_ + "/a").good()) << "the command never ran";
}

}  // namespace
