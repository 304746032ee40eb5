// librdkafka for the Kafka audit sink, loaded when the first one is opened
// (shared_library.h says why it is not linked).
#pragma once

#include <librdkafka/rdkafka.h>

#include "common/result.h"

namespace sv::supervisor::audit {

// Every librdkafka function the sink calls, by its name without "rd_kafka_".
#define SV_RDKAFKA_FUNCTIONS(X)                                                          \
  X(conf_new) X(conf_destroy) X(conf_set) X(conf_set_opaque) X(conf_set_dr_msg_cb)       \
  X(conf_set_error_cb) X(conf_set_log_cb) X(conf_interceptor_add_on_new)                 \
  X(interceptor_add_on_thread_start) X(destroy) X(opaque) X(poll) X(producev)     \
  X(purge) X(fatal_error) X(last_error) X(err2str) X(set_log_queue) X(queue_get_main)    \
  X(queue_io_event_enable) X(queue_destroy) X(topic_new) X(topic_destroy)

struct Rdkafka {
#define SV_RDKAFKA_MEMBER(name) decltype(&::rd_kafka_##name) name = nullptr;
  SV_RDKAFKA_FUNCTIONS(SV_RDKAFKA_MEMBER)
#undef SV_RDKAFKA_MEMBER
  decltype(&::rd_kafka_new) create = nullptr;  // rd_kafka_new: `new` is C++'s
};

// The library, loaded on the first call (thread-safe) and kept for the
// process's life; an error names the missing library or symbol.
Result<const Rdkafka*> rdkafka();

}  // namespace sv::supervisor::audit
