// DNS wire format (RFC 1035) for the domain allowlist: a bounds-checked
// parser for the answers the supervised tree receives, and a query builder
// for resolving the policy's host names at session start.
//
// The parser reads bytes the tree's DNS server sent, so every read is
// bounds-checked, compression pointers may only point backwards (no loops),
// and names are limited to 255 bytes as on the wire. It is fuzzed
// (tests/fuzz/dns_fuzz.cpp). Only what the allowlist needs is extracted: the
// question, and the A/AAAA addresses that answer it directly or through a
// CNAME chain starting at the question name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/cidr.h"

namespace sv::supervisor::dns {

inline constexpr uint16_t kTypeA = 1, kTypeCname = 5, kTypeAaaa = 28;
inline constexpr uint16_t kClassIn = 1;
inline constexpr size_t kHeaderSize = 12;
// The longest name on the wire (RFC 1035 3.1), in presentation form at most 253.
inline constexpr size_t kMaxNameWire = 255;

struct Address {
  policy::Ip6 ip{};  // IPv4 in mapped form (::ffff:a.b.c.d)
  uint32_t ttl = 0;  // seconds, as answered
};

struct Message {
  uint16_t id = 0;
  bool response = false;   // QR bit
  bool truncated = false;  // TC bit: the full answer needs TCP
  uint8_t opcode = 0;
  uint8_t rcode = 0;
  std::string qname;  // lower case, dotted, no trailing dot ("" for the root)
  uint16_t qtype = 0, qclass = 0;
  // A/AAAA records of class IN whose owner is the question name or a name
  // the question name reaches through CNAME records of this message.
  std::vector<Address> addresses;
};

// Parses one message (a UDP payload, or a TCP one without its length
// prefix). Exactly one question is required: that is what every resolver
// sends and what lets the answers be attributed to a name.
Result<Message> parse(std::span<const uint8_t> wire);

// A recursive query (RD set) for `name` (dotted, no trailing dot needed).
// EINVAL for a name that does not fit the wire format.
Result<std::vector<uint8_t>> buildQuery(uint16_t id, std::string_view name, uint16_t qtype);

// The message id is the first two bytes; a proxy rewrites it in place.
inline uint16_t readId(std::span<const uint8_t> wire) {
  return wire.size() < 2 ? 0 : static_cast<uint16_t>(wire[0] << 8 | wire[1]);
}
inline void writeId(std::span<uint8_t> wire, uint16_t id) {
  if (wire.size() < 2) return;
  wire[0] = static_cast<uint8_t>(id >> 8);
  wire[1] = static_cast<uint8_t>(id);
}

}  // namespace sv::supervisor::dns
