// Acknowledging transports (Kafka, OTLP/HTTP: transport.h) through the
// AuditLog, with a fake whose receiver the test takes offline, lets reject
// records, or never answers: every event arrives once and in order when the
// receiver comes back (memory queue, then spool), what the transport gives up
// on is counted in an exact `dropped` record, and the final drain waits for
// the acknowledgements, then abandons and counts what never got one.
#include <gtest/gtest.h>
#include <time.h>

#include <deque>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/formats/formats.h"
#include "tests/unit/audit/audit_test_util.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;

// The receiver's side lives in Receiver, which the test keeps: the AuditLog
// owns (and destroys) the transport.
struct Receiver {
  bool online = true;
  size_t reject_next = 0;      // this many of the next records are refused for good
  std::vector<json> records;   // acknowledged, in order
  std::deque<std::string> in_flight;
  std::vector<std::string> lost;
  size_t max_in_flight = 64;   // the transport's own queue
  bool abandoned = false;
};

class FakeAckTransport : public audit::Transport {
 public:
  explicit FakeAckTransport(Receiver& rx) : rx_(rx) {}
  const std::string& name() const override { return name_; }
  Result<size_t> write(const char* data, size_t len) override {
    std::string record(data, len);
    EXPECT_EQ(record.back(), '\n') << "one whole record per write";
    EXPECT_EQ(record.find('\n'), len - 1) << "exactly one record per write";
    if (rx_.in_flight.size() >= rx_.max_in_flight) return size_t{0};
    rx_.in_flight.push_back(std::move(record));
    return len;
  }
  // The receiver answers when the loop drives the transport.
  bool up(int64_t, bool) override {
    if (!rx_.online) return false;
    while (!rx_.in_flight.empty()) {
      std::string r = std::move(rx_.in_flight.front());
      rx_.in_flight.pop_front();
      if (rx_.reject_next) {
        --rx_.reject_next;
        rx_.lost.push_back(std::move(r));
      } else {
        rx_.records.push_back(json::parse(r));
      }
    }
    return true;
  }
  bool recoverable() const override { return true; }
  bool datagram() const override { return true; }
  bool loopOnly() const override { return true; }
  int pollFd() const override { return -1; }
  size_t inFlight() const override { return rx_.in_flight.size(); }
  void abandon() override {
    rx_.abandoned = true;
    for (auto& r : rx_.in_flight) rx_.lost.push_back(std::move(r));
    rx_.in_flight.clear();
  }
  void takeLost(const std::function<void(std::string_view)>& lost) override {
    for (const auto& r : rx_.lost) lost(r);
    rx_.lost.clear();
  }

 private:
  Receiver& rx_;
  std::string name_ = "fake-ack";
};

AuditEvent decision() { return test::fileDecision("allow", "/work/file", "allow:workspace"); }

std::vector<uint64_t> eventSeqs(const Receiver& rx) {
  std::vector<uint64_t> seqs;
  for (const auto& r : rx.records)
    if (r.contains("seq")) seqs.push_back(r["seq"].get<uint64_t>());
  return seqs;
}

TEST(AckSinkTest, ReceiverAwayThenBackLosesNothingAndKeepsOrder) {
  test::TempDir dir;
  Receiver rx;
  AuditLogOptions opts;
  opts.max_buffer_bytes = 16 << 10;  // small: most of the outage goes to the spool
  AuditLog log(SessionInfo{"s", "h"}, opts);
  ASSERT_TRUE(log.addSpooledSink(std::make_unique<FakeAckTransport>(rx), dir.path(), 64 << 20).ok());
  constexpr uint64_t kN = 5000;
  for (uint64_t i = 0; i < kN; ++i) {
    if (i == 1000) rx.online = false;
    if (i == 4000) rx.online = true;
    log.emit(decision());
    if (i % 50 == 0) log.flush();
  }
  log.close();
  EXPECT_EQ(log.counters().dropped, 0u);
  EXPECT_TRUE(log.sinkErrors().empty());
  EXPECT_TRUE(test::seqsAreOneTo(eventSeqs(rx), kN)) << "every event once, in seq order";
}

TEST(AckSinkTest, RecordsTheTransportGivesUpOnAreAnExactDroppedRecord) {
  test::TempDir dir;
  Receiver rx;
  AuditLog log(SessionInfo{"s", "h"});
  ASSERT_TRUE(log.addSpooledSink(std::make_unique<FakeAckTransport>(rx), dir.path(), 1 << 20).ok());
  for (int i = 0; i < 10; ++i) log.emit(decision());
  rx.reject_next = 3;  // seqs 1..3 are refused
  log.flush();
  for (int i = 0; i < 5; ++i) log.emit(decision());
  log.close();
  EXPECT_EQ(log.counters().dropped, 3u);
  std::set<uint64_t> got;
  const json* dropped = nullptr;
  for (const auto& r : rx.records) {
    if (r.value("operation", "") == "dropped") dropped = &r;
    else got.insert(r["seq"].get<uint64_t>());
  }
  ASSERT_NE(dropped, nullptr) << "the loss is reported on the sink itself";
  EXPECT_EQ((*dropped)["dropped"]["count"], 3u);
  EXPECT_EQ((*dropped)["dropped"]["first_seq"], 1u);
  EXPECT_EQ((*dropped)["dropped"]["last_seq"], 3u);
  EXPECT_EQ(got.size(), 12u);
  for (uint64_t s = 1; s <= 3; ++s) EXPECT_FALSE(got.count(s));
}

TEST(AckSinkTest, CloseAbandonsWhatNeverGetsAnAnswerAndCountsIt) {
  test::TempDir dir;
  Receiver rx;
  rx.max_in_flight = 10;
  AuditLogOptions opts;
  opts.close_timeout = std::chrono::milliseconds(200);
  AuditLog log(SessionInfo{"s", "h"}, opts);
  ASSERT_TRUE(log.addSpooledSink(std::make_unique<FakeAckTransport>(rx), dir.path(), 1 << 20).ok());
  for (int i = 0; i < 4; ++i) log.emit(decision());
  log.flush();
  log.flush();  // the second flush's up() acknowledges the first one's writes
  ASSERT_EQ(rx.records.size(), 4u);
  for (int i = 0; i < 30; ++i) log.emit(decision());
  log.flush();  // 10 taken by the transport, 20 wait in the queue
  ASSERT_EQ(rx.in_flight.size(), 10u);
  rx.online = false;  // and the receiver never answers again
  log.close();
  EXPECT_TRUE(rx.abandoned);
  EXPECT_EQ(rx.records.size(), 4u);
  EXPECT_EQ(log.counters().dropped, 30u) << "in flight and queued: counted, never silent";
  ASSERT_EQ(log.sinkErrors().size(), 1u);
  EXPECT_EQ(log.sinkErrors()[0].code, ETIMEDOUT);
}

TEST(AckSinkTest, RecordSeqReadsEachFormat) {
  SessionInfo session{"0123456789abcdef0123456789abcdef", "h"};
  const timespec now{1700000000, 0};
  for (auto format : {AuditFormat::Native, AuditFormat::Ocsf, AuditFormat::Ecs}) {
    std::string line;
    encodeEventAs(format, line, decision(), session, 42, now);
    EXPECT_EQ(recordSeq(format, line), 42u) << line;
    EXPECT_EQ(recordSeq(format, encodeDroppedAs(format, session, now, 1, 5, 5, 1)), 0u);
  }
  EXPECT_EQ(recordSeq(AuditFormat::Native, "not json"), 0u);
  EXPECT_EQ(recordSeq(AuditFormat::Ocsf, R"({"metadata":{"sequence":-1}})"), 0u);
}

}  // namespace
}  // namespace sv::supervisor
