// libFuzzer entry for the DNS wire-format parser (supervisor/net/dns_message.h):
// it reads bytes a resolver chosen by the supervised tree sent, and what it
// extracts widens the network allowlist. Properties for every input:
//  - no out-of-bounds read, no UB, no endless pointer walk (ASan/UBSan/timeout);
//  - parsing is deterministic (same input, same result);
//  - a question name without escapes survives buildQuery() and parse() again;
//  - there are never more addresses than answer records.
#include <cstddef>
#include <cstdint>
#include <span>

#include "supervisor/net/dns_message.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sv::supervisor::dns;
  std::span<const uint8_t> wire(data, size);
  auto m = parse(wire);
  if (!m) return 0;
  auto again = parse(wire);
  check(again.ok() && again->qname == m->qname && again->addresses.size() == m->addresses.size());
  check(size >= kHeaderSize);
  const size_t answers = static_cast<size_t>(data[6]) << 8 | data[7];
  check(m->addresses.size() <= answers);
  if (!m->qname.empty() && m->qname.find('\\') == std::string::npos) {
    auto q = buildQuery(m->id, m->qname, m->qtype);
    check(q.ok());
    auto back = parse(*q);
    check(back.ok() && back->qname == m->qname && back->qtype == m->qtype && !back->response);
  }
  return 0;
}
