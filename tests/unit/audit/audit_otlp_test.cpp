// The OTLP/HTTP logs sink (supervisor/audit/sinks/otlp_transport.h) through a
// real AuditLog against tests/unit/audit/otlp_receiver.py, which checks every
// request against the OTLP JSON mapping of logs.proto: every event arrives
// once and in order through 429 (Retry-After honoured) and 503 answers; a
// collector away for seconds loses nothing (spool); a 400 loses exactly its
// batch, named in a dropped record; a collector that never answers is given
// up on at close_timeout, everything counted. And the record scan the
// LogRecord attributes come from.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "common/unique_fd.h"
#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/formats/formats.h"
#include "supervisor/audit/sinks/otlp_encode.h"
#include "tests/unit/audit/audit_test_util.h"
#include "tests/unit/audit/otlp_receiver.h"

namespace sv::supervisor {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

AuditEvent decision(int i) {
  return test::fileDecision(i % 3 ? "allow" : "deny", "/work/file" + std::to_string(i),
                            i % 3 ? "allow:workspace" : "deny-write-env");
}

OtlpSinkOptions sinkOptions(const std::string& url, const std::string& spool) {
  OtlpSinkOptions o;
  o.otlp.url = url;
  o.otlp.headers = {{"Authorization", "Bearer t0ken"}};
  o.otlp.batch_records = 256;
  o.otlp.linger = std::chrono::milliseconds(20);
  o.otlp.max_backoff = std::chrono::milliseconds(400);
  o.spool_dir = spool;
  o.spool_max_bytes = 256u << 20;
  return o;
}

// Emits n events as a busy session would, with the loop's flush in between
// (every `every` events, sleeping `nap` each time); `at(i)` runs before event i.
template <typename At>
void emitMany(AuditLog& log, int n, int every, std::chrono::microseconds nap, At at) {
  for (int i = 0; i < n; ++i) {
    at(i);
    log.emit(decision(i));
    if (i % every == 0) {
      log.flush();
      std::this_thread::sleep_for(nap);
    }
  }
}

std::vector<uint64_t> eventSeqs(const std::vector<json>& records) {
  std::vector<uint64_t> seqs;
  for (const auto& r : records)
    if (r["event"].contains("seq")) seqs.push_back(r["event"]["seq"].get<uint64_t>());
  return seqs;
}

void expectAllValid(const std::vector<json>& requests) {
  for (const auto& r : requests) EXPECT_TRUE(r["error"].is_null()) << r.dump();
}

class OtlpSinkTest : public testing::Test {
 protected:
  test::TempDir dir_;
  std::string spool() const { return dir_.path() + "/spool"; }
  void SetUp() override { ::mkdir(spool().c_str(), 0700); }
};

TEST_F(OtlpSinkTest, EveryEventOnceInOrderThrough429And503) {
  test::OtlpReceiver rx(dir_.path(), {"--schedule", "200,429,200,503,200", "--retry-after", "1"});
  ASSERT_TRUE(rx.start());
  AuditLogOptions opts;
  // Not what is measured (nothing lost): the drain runs at the Python
  // receiver's pace, 3-4 s alone, 21 s once beside two builds under ASan.
  opts.close_timeout = std::chrono::seconds(60);
  AuditLog log(SessionInfo{"0123456789abcdef0123456789abcdef", "otlp-host"}, opts);
  ASSERT_TRUE(log.addOtlpSink(sinkOptions(rx.url(), spool())).ok());
  constexpr int kN = 3000;
  emitMany(log, kN, 20, std::chrono::microseconds(500), [](int) {});
  log.close();
  EXPECT_EQ(log.counters().dropped, 0u);
  EXPECT_TRUE(log.sinkErrors().empty());

  const auto requests = rx.requests();
  expectAllValid(requests);
  ASSERT_GE(requests.size(), 6u);
  // The receiver refused those without keeping anything: exactly once.
  EXPECT_TRUE(test::seqsAreOneTo(eventSeqs(rx.records()), kN)) << "every event once, in seq order";
  // Retried: the same batch again, after Retry-After (1 s) and after a backoff.
  EXPECT_EQ(requests[1]["status"], 429);
  EXPECT_EQ(requests[2]["seqs"], requests[1]["seqs"]);
  EXPECT_GE(requests[2]["t"].get<double>() - requests[1]["t"].get<double>(), 0.95)
      << "Retry-After: 1 honoured";
  EXPECT_EQ(requests[3]["status"], 503);
  EXPECT_EQ(requests[4]["seqs"], requests[3]["seqs"]);
  EXPECT_GE(requests[4]["t"].get<double>() - requests[3]["t"].get<double>(), 0.045)
      << "backoff: at least half of first_backoff";
  EXPECT_EQ(requests[0]["auth"], "Bearer t0ken") << "the sink's headers";

  // What a pipeline routes on.
  const auto records = rx.records();
  ASSERT_GE(records.size(), 2u);
  const json first = records.front();
  EXPECT_EQ(first["attributes"]["supervise.seq"], "1");
  EXPECT_EQ(first["attributes"]["supervise.decision"], "deny");
  EXPECT_EQ(first["attributes"]["supervise.rule_id"], "deny-write-env");
  EXPECT_EQ(first["attributes"]["supervise.category"], "file");
  EXPECT_EQ(first["attributes"]["log.record.uid"], first["event"]["event_id"]);
  EXPECT_EQ(first["severityNumber"], 13);
  EXPECT_EQ(records[1]["severityNumber"], 9);
}

TEST_F(OtlpSinkTest, CollectorAwayForSecondsLosesNothingAndKeepsOrder) {
  test::OtlpReceiver rx(dir_.path(), {});
  ASSERT_TRUE(rx.start());
  AuditLogOptions opts;
  opts.max_buffer_bytes = 256u << 10;  // most of the outage goes to the spool
  opts.close_timeout = std::chrono::seconds(20);
  AuditLog log(SessionInfo{"0123456789abcdef0123456789abcdef", "otlp-host"}, opts);
  ASSERT_TRUE(log.addOtlpSink(sinkOptions(rx.url(), spool())).ok());
  constexpr int kN = 20000;
  Clock::time_point away, back;
  emitMany(log, kN, 50, std::chrono::microseconds(5000), [&](int i) {
    if (i == 2000) {
      rx.stop();  // connection refused from here (and a reset if a request was out)
      away = Clock::now();
    }
    if (i == 16000) {
      ASSERT_TRUE(rx.start());
      back = Clock::now();
    }
  });
  const auto t0 = Clock::now();
  log.close();
  const double drain_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GE(std::chrono::duration<double>(back - away).count(), 1.5) << "a real outage";
  EXPECT_EQ(log.counters().dropped, 0u);
  EXPECT_TRUE(log.sinkErrors().empty());
  expectAllValid(rx.requests());
  // At least once: a batch the receiver logged just before it was killed is
  // sent again. Every seq arrives, first arrivals in order, and a duplicate
  // is at most one batch.
  const auto seqs = eventSeqs(rx.records());
  std::vector<uint64_t> first;
  std::set<uint64_t> seen;
  for (uint64_t s : seqs)
    if (seen.insert(s).second) first.push_back(s);
  EXPECT_TRUE(test::seqsAreOneTo(first, kN));
  EXPECT_LE(seqs.size() - first.size(), 256u);
  RecordProperty("drain_seconds", std::to_string(drain_s));
  std::printf("outage %.2f s, final drain %.3f s, %zu duplicates\n",
              std::chrono::duration<double>(back - away).count(), drain_s,
              seqs.size() - first.size());
}

TEST_F(OtlpSinkTest, A400LosesExactlyItsBatchNamedInADroppedRecord) {
  test::OtlpReceiver rx(dir_.path(), {"--schedule", "200,400"});
  ASSERT_TRUE(rx.start());
  AuditLogOptions opts;
  opts.close_timeout = std::chrono::seconds(20);
  AuditLog log(SessionInfo{"0123456789abcdef0123456789abcdef", "otlp-host"}, opts);
  auto o = sinkOptions(rx.url(), spool());
  o.otlp.batch_records = 100;
  o.otlp.linger = std::chrono::seconds(30);  // batches cut only when full: 1-100, 101-200, ...
  ASSERT_TRUE(log.addOtlpSink(o).ok());
  emitMany(log, 500, 10, std::chrono::microseconds(200), [](int) {});
  log.close();
  const auto requests = rx.requests();
  expectAllValid(requests);
  ASSERT_GE(requests.size(), 2u);
  ASSERT_EQ(requests[1]["status"], 400);
  const auto rejected = requests[1]["seqs"].get<std::vector<uint64_t>>();
  ASSERT_EQ(rejected.size(), 100u);
  EXPECT_EQ(rejected.front(), 101u);
  EXPECT_EQ(rejected.back(), 200u);
  EXPECT_EQ(log.counters().dropped, 100u);
  const json* dropped = nullptr;
  std::vector<uint64_t> got;
  const auto records = rx.records();
  for (const auto& r : records) {
    if (r["event"].value("operation", "") == "dropped")
      dropped = &r["event"];
    else
      got.push_back(r["event"]["seq"].get<uint64_t>());
  }
  ASSERT_NE(dropped, nullptr) << "the loss is reported on the sink itself";
  EXPECT_EQ((*dropped)["dropped"]["count"], 100u);
  EXPECT_EQ((*dropped)["dropped"]["first_seq"], 101u);
  EXPECT_EQ((*dropped)["dropped"]["last_seq"], 200u);
  std::vector<uint64_t> want;
  for (uint64_t s = 1; s <= 500; ++s)
    if (s < 101 || s > 200) want.push_back(s);
  EXPECT_EQ(got, want);
}

TEST_F(OtlpSinkTest, CloseGivesUpOnACollectorThatNeverAnswers) {
  // Listens, never accepts: the connection completes, the request is never answered.
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s.get(), 8), 0);
  socklen_t len = sizeof a;
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  AuditLogOptions opts;
  opts.close_timeout = std::chrono::milliseconds(1000);
  AuditLog log(SessionInfo{"0123456789abcdef0123456789abcdef", "otlp-host"}, opts);
  ASSERT_TRUE(log.addOtlpSink(sinkOptions("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) +
                                              "/v1/logs",
                                          spool()))
                  .ok());
  emitMany(log, 600, 10, std::chrono::microseconds(1000), [](int) {});
  const auto t0 = Clock::now();
  log.close();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  // 1 s close_timeout, 5 s by default: well under 2 s proves the bound (1.51
  // was seen on a loaded host under ASan).
  EXPECT_LT(took, 2.5) << "close_timeout bounds the drain";
  EXPECT_EQ(log.counters().dropped, 600u) << "in flight, batched and queued: all counted";
  ASSERT_EQ(log.sinkErrors().size(), 1u);
  EXPECT_EQ(log.sinkErrors()[0].code, ETIMEDOUT);
}

TEST(OtlpEncodeTest, ScanReadsWhatTheAttributesNeedInEachFormat) {
  SessionInfo session{"0123456789abcdef0123456789abcdef", "h"};
  const timespec now{1700000000, 123456789};
  const AuditEvent ev = test::fileDecision("deny", "/work/.env", "deny-write-env");
  std::string line;
  encodeEventAs(AuditFormat::Native, line, ev, session, 42, now);
  auto f = audit::scanRecord(line);
  EXPECT_EQ(f.seq, 42u);
  EXPECT_EQ(f.time_ns, 1700000000123456789);
  EXPECT_EQ(f.decision, "deny");
  EXPECT_EQ(f.rule_id, "deny-write-env");
  EXPECT_EQ(f.category, "file");
  EXPECT_EQ(f.session_id, session.session_id);
  EXPECT_EQ(f.event_id, session.session_id + "-42");
  EXPECT_EQ(audit::severityOf(f).number, 13);
  for (auto format : {AuditFormat::Ocsf, AuditFormat::Ecs}) {
    line.clear();
    encodeEventAs(format, line, ev, session, 42, now);
    EXPECT_EQ(audit::scanRecord(line).seq, 42u) << line;
    EXPECT_GT(audit::scanRecord(line).time_ns, 0) << line;
  }
  EXPECT_EQ(audit::scanRecord("not json").seq, 0u);
  EXPECT_EQ(audit::scanRecord(R"({"seq":1.5})").seq, 0u);
  EXPECT_EQ(audit::scanRecord(R"({"time":"2026-13-01T00:00:00Z"})").time_ns, 0);
  EXPECT_EQ(audit::scanRecord(R"({"time":"1970-01-01T00:00:01.5Z"})").time_ns, 1500000000);
  // Escapes decoded; nested members only one level down, not inside arrays.
  auto esc = audit::scanRecord(R"({"rule":{"id":"deny:\"q\"\u00e9"},"x":[{"seq":7}],"seq":3})");
  EXPECT_EQ(esc.rule_id, "deny:\"q\"\xc3\xa9");
  EXPECT_EQ(esc.seq, 3u);
  EXPECT_EQ(audit::scanRecord(R"({"a":{"rule":{"id":"deep"}}})").rule_id, "");
  // Hostile input: deep nesting (no recursion), invalid UTF-8, a record not an object.
  std::string deep = R"({"seq":9,"a":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(audit::scanRecord(deep).seq, 9u);
  EXPECT_EQ(audit::scanRecord("{\"category\":\"\xff\"}").category, "");
  EXPECT_EQ(audit::scanRecord(R"(["seq",1])").seq, 0u);
}

}  // namespace
}  // namespace sv::supervisor
