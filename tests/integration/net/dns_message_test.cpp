// The DNS wire-format parser behind domain entries: what it attributes to a
// question name, and that malformed input (bad pointers, overruns, loops)
// is refused instead of read out of bounds. tests/fuzz/dns_fuzz.cpp covers
// the same parser with generated input.
#include "supervisor/net/dns_message.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace sv::supervisor::dns {
namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}
void putName(Bytes& b, const std::string& dotted) {
  size_t start = 0;
  while (start < dotted.size()) {
    size_t dot = dotted.find('.', start);
    if (dot == std::string::npos) dot = dotted.size();
    b.push_back(static_cast<uint8_t>(dot - start));
    b.insert(b.end(), dotted.begin() + start, dotted.begin() + dot);
    start = dot + 1;
  }
  b.push_back(0);
}

// A response header with one question for `qname` (at offset 12).
Bytes response(const std::string& qname, uint16_t an, uint16_t ar = 0) {
  Bytes b;
  put16(b, 0x1234);
  put16(b, 0x8180);  // QR, RD, RA
  put16(b, 1);
  put16(b, an);
  put16(b, 0);
  put16(b, ar);
  putName(b, qname);
  put16(b, kTypeA);
  put16(b, kClassIn);
  return b;
}

void putA(Bytes& b, uint32_t ttl, uint8_t a, uint8_t bb, uint8_t c, uint8_t d) {
  put16(b, kTypeA);
  put16(b, kClassIn);
  put32(b, ttl);
  put16(b, 4);
  b.insert(b.end(), {a, bb, c, d});
}

policy::Ip6 v4(const char* text) { return *policy::parseIp(text); }

TEST(DnsMessage, QueryRoundTrip) {
  auto q = buildQuery(0xbeef, "Allowed.Test.", kTypeAaaa);
  ASSERT_TRUE(q.ok()) << q.error().message();
  auto m = parse(*q);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->id, 0xbeef);
  EXPECT_FALSE(m->response);
  EXPECT_EQ(m->qname, "allowed.test");
  EXPECT_EQ(m->qtype, kTypeAaaa);
  EXPECT_EQ(m->qclass, kClassIn);
  EXPECT_FALSE(buildQuery(1, "a..b", kTypeA).ok());
  EXPECT_FALSE(buildQuery(1, std::string(64, 'x') + ".test", kTypeA).ok());
}

TEST(DnsMessage, AnswersWithCompressedOwnerAndTtl) {
  Bytes b = response("Allowed.TEST", 2);
  b.insert(b.end(), {0xc0, 12});  // owner: pointer to the question name
  putA(b, 300, 198, 51, 100, 2);
  b.insert(b.end(), {0xc0, 12});
  put16(b, kTypeAaaa);
  put16(b, kClassIn);
  put32(b, 0x80000001u);  // high bit set: read as 0 (RFC 2181)
  put16(b, 16);
  policy::Ip6 six = *policy::parseIp("2001:db8:5::2");
  b.insert(b.end(), six.begin(), six.end());
  auto m = parse(b);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_TRUE(m->response);
  EXPECT_EQ(m->qname, "allowed.test");
  ASSERT_EQ(m->addresses.size(), 2u);
  EXPECT_EQ(m->addresses[0].ip, v4("198.51.100.2"));
  EXPECT_EQ(m->addresses[0].ttl, 300u);
  EXPECT_EQ(m->addresses[1].ip, six);
  EXPECT_EQ(m->addresses[1].ttl, 0u);
}

TEST(DnsMessage, CnameChainCountsOtherOwnersDoNot) {
  Bytes b = response("www.allowed.test", 3, 1);
  b.insert(b.end(), {0xc0, 12});
  put16(b, kTypeCname);
  put16(b, kClassIn);
  put32(b, 60);
  Bytes target;
  putName(target, "edge.cdn.test");
  put16(b, static_cast<uint16_t>(target.size()));
  const size_t target_at = b.size();
  b.insert(b.end(), target.begin(), target.end());
  // edge.cdn.test A, owner compressed to the CNAME target.
  b.insert(b.end(), {0xc0, static_cast<uint8_t>(target_at)});
  putA(b, 60, 198, 51, 100, 7);
  // An unrelated owner in the answer section: not an answer to the question.
  putName(b, "other.test");
  putA(b, 60, 198, 51, 100, 3);
  // Glue in the additional section never counts.
  b.insert(b.end(), {0xc0, 12});
  putA(b, 60, 198, 51, 100, 9);
  auto m = parse(b);
  ASSERT_TRUE(m.ok()) << m.error().message();
  ASSERT_EQ(m->addresses.size(), 1u);
  EXPECT_EQ(m->addresses[0].ip, v4("198.51.100.7"));
}

TEST(DnsMessage, LabelWithADotIsEscapedNotSplit) {
  Bytes b = response("x", 0);
  b.resize(12);
  b.insert(b.end(), {12});
  const char* label = "allowed.test";
  b.insert(b.end(), label, label + 12);
  b.push_back(0);
  put16(b, kTypeA);
  put16(b, kClassIn);
  auto m = parse(b);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->qname, "allowed\\046test");
}

TEST(DnsMessage, MalformedInputIsRefused) {
  Bytes good = response("a.test", 1);
  good.insert(good.end(), {0xc0, 12});
  putA(good, 1, 1, 2, 3, 4);
  ASSERT_TRUE(parse(good).ok());
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(parse(std::span(good.data(), cut)).ok()) << "truncated at " << cut;
  }

  Bytes forward = good;
  forward[good.size() - 16] = 0xc0;  // owner pointer to itself
  forward[good.size() - 15] = static_cast<uint8_t>(good.size() - 16);
  EXPECT_FALSE(parse(forward).ok());

  Bytes overrun = good;
  overrun[good.size() - 5] = 5;  // rdlength past the end
  EXPECT_FALSE(parse(overrun).ok());

  Bytes two_questions = good;
  two_questions[5] = 2;
  EXPECT_FALSE(parse(two_questions).ok());

  // A label run that loops back through a backwards pointer: bounded by the
  // 255-byte name limit, refused.
  Bytes loop = response("a", 1);
  loop.resize(12);
  loop.insert(loop.end(), {3, 'a', 'b', 'c', 0xc0, 12});
  put16(loop, kTypeA);
  put16(loop, kClassIn);
  EXPECT_FALSE(parse(loop).ok());

  Bytes long_label = response("a", 0);
  long_label.resize(12);
  long_label.push_back(64);
  long_label.insert(long_label.end(), 64, 'x');
  long_label.push_back(0);
  put16(long_label, kTypeA);
  put16(long_label, kClassIn);
  EXPECT_FALSE(parse(long_label).ok());
}

TEST(DnsMessage, IdHelpers) {
  Bytes b = {0, 0, 1};
  writeId(b, 0xabcd);
  EXPECT_EQ(readId(b), 0xabcd);
  Bytes tiny = {7};
  writeId(tiny, 1);
  EXPECT_EQ(tiny[0], 7);
  EXPECT_EQ(readId(tiny), 0);
}

}  // namespace
}  // namespace sv::supervisor::dns
