// kafka_mock_broker: librdkafka's mock cluster as a process of its own, for
// measuring `supervise --audit-kafka` (tools/sink-bench). Not a test.
// Prints the bootstrap address on stdout, serves until stdin closes, then
// prints how many records the topic "audit" holds.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "tests/unit/audit/kafka_mock.h"

int main() {
  sv::test::MockKafka kafka("audit", 1);
  if (!kafka.ok()) {
    std::fprintf(stderr, "kafka_mock_broker: no mock cluster\n");
    return 1;
  }
  std::printf("%s\n", kafka.bootstraps().c_str());
  std::fflush(stdout);
  char buf[256];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  const auto records = sv::test::consumeAll(kafka.bootstraps(), "audit", 1, SIZE_MAX,
                                            std::chrono::milliseconds(2000));
  std::printf("%zu\n", records.size());
  return 0;
}
