// Test helpers over tracer::NetFilter events, shared by the network tests
// (tests/integration/bpf, tests/integration/net).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "tracer/bpf/net_filter.h"

namespace sv::tracer::testing {

// Drains the ring and keeps the events of one process (thread group).
inline std::vector<NetEvent> eventsOf(NetFilter& filter, pid_t tgid) {
  std::vector<NetEvent> out;
  filter.consume([&](const NetEvent& e) {
    if (e.tgid == static_cast<uint32_t>(tgid)) out.push_back(e);
  });
  return out;
}

// The first event of `op` to addr:port, or nullptr.
inline const NetEvent* findEvent(const std::vector<NetEvent>& evs, uint8_t op,
                                 const policy::Ip6& addr, uint16_t port) {
  for (const auto& e : evs)
    if (e.op == op && e.addr == addr && e.port == port) return &e;
  return nullptr;
}

}  // namespace sv::tracer::testing
