// Test helpers for the Kafka sink: librdkafka's in-process mock cluster (a
// broker speaking the Kafka protocol on a loopback port, no JVM) and a
// consumer that reads a whole topic back, every partition from the start.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <string>
#include <vector>

namespace sv::test {

struct KafkaRecord {
  int32_t partition = -1;
  int64_t offset = -1;
  std::string key, value;
};

// One mock cluster of `brokers` brokers, with `topic` created in `partitions`
// partitions. rd_kafka_mock_cluster_new() needs a client handle to live in.
class MockKafka {
 public:
  MockKafka(const std::string& topic, int partitions, int brokers = 1) {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);  // the mock's own chatter
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk_) return;
    cluster_ = rd_kafka_mock_cluster_new(rk_, brokers);
    if (cluster_) rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1);
  }
  ~MockKafka() {
    if (cluster_) rd_kafka_mock_cluster_destroy(cluster_);
    if (rk_) rd_kafka_destroy(rk_);
  }
  MockKafka(const MockKafka&) = delete;
  MockKafka& operator=(const MockKafka&) = delete;

  bool ok() const { return cluster_ != nullptr; }
  std::string bootstraps() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }
  // Broker ids start at 1. Down: connections closed, new ones refused.
  void down(int32_t broker = 1) { rd_kafka_mock_broker_set_down(cluster_, broker); }
  void up(int32_t broker = 1) { rd_kafka_mock_broker_set_up(cluster_, broker); }
  rd_kafka_mock_cluster_t* cluster() { return cluster_; }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

// Reads `topic` (partitions 0..partitions-1, from the beginning) until `want`
// records arrived or `timeout` passed without a new one.
inline std::vector<KafkaRecord> consumeAll(const std::string& bootstraps, const std::string& topic,
                                           int partitions, size_t want,
                                           std::chrono::milliseconds timeout =
                                               std::chrono::milliseconds(10000)) {
  std::vector<KafkaRecord> out;
  char err[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", "sv-test", err, sizeof err);
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
  rd_kafka_conf_set(conf, "enable.partition.eof", "false", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) return out;
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  auto last = std::chrono::steady_clock::now();
  while (out.size() < want && std::chrono::steady_clock::now() - last < timeout) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (!m->err) {
      KafkaRecord r{m->partition, m->offset, {}, {}};
      if (m->key) r.key.assign(static_cast<const char*>(m->key), m->key_len);
      if (m->payload) r.value.assign(static_cast<const char*>(m->payload), m->len);
      out.push_back(std::move(r));
      last = std::chrono::steady_clock::now();
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_assign(rk, nullptr);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

}  // namespace sv::test
