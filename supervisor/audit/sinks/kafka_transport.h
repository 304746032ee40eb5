// Kafka transport: an acknowledging Transport (transport.h) over a librdkafka
// producer. One audit record is one Kafka message (the JSON line without its
// '\n'), keyed by the session id so a session stays in one partition, in order.
//
// Defaults (the sink's `options`, librdkafka property names, come last and may
// override any of them): acks=all and enable.idempotence=true (the broker
// keeps each message once and in order, even across librdkafka's own
// retries), compression.type=lz4, linger.ms=10, message.timeout.ms=0 (retry
// forever: the AuditLog's close deadline decides when to give up, through
// abandon()), queue.buffering.max.messages=10000 and max.kbytes=16384 (memory
// stays bounded: past that write() returns 0 and the AuditLog's memory queue,
// then its on-disk spool, hold the rest).
//
// A record librdkafka gives up on (rejected by the broker, too large, purged
// by abandon()) comes back through takeLost(). Every librdkafka callback runs
// on the caller's thread, inside up() (rd_kafka_poll), never on librdkafka's
// own threads. Its log goes nowhere unless the options set `debug`; instead
// the reporter gets one line when the brokers become unreachable and one when
// a delivery succeeds again.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "supervisor/audit/sinks/transport.h"

namespace sv::supervisor::audit {

struct KafkaOptions {
  std::string brokers;  // bootstrap.servers: host:port[,host:port...]
  std::string topic;
  std::string key;  // every message's key: the session id
  std::map<std::string, std::string> properties;  // librdkafka names, applied last
  // Where the "unreachable" / "reachable again" lines go; empty: stderr.
  std::function<void(const std::string& line)> report;
};

// Creates the producer (and so librdkafka's threads; kafka_transport.cpp says
// why that is safe where the AuditLog is opened). A property librdkafka does
// not know or refuses is an error naming it.
Result<std::unique_ptr<Transport>> openKafkaTransport(KafkaOptions options);

}  // namespace sv::supervisor::audit
