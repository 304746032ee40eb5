// CIDR parsing and matching (see cidr.h). Uses inet_pton/inet_ntop, which are
// pure libc string conversions (no syscalls), so policy/ stays pure.
#include "policy/cidr.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace sv::policy {

Ip6 mapV4(const std::array<uint8_t, 4>& v4) {
  Ip6 ip{};
  ip[10] = 0xff;
  ip[11] = 0xff;
  std::memcpy(&ip[12], v4.data(), 4);
  return ip;
}

static bool isMappedV4(const Ip6& ip) {
  for (int i = 0; i < 10; ++i) {
    if (ip[i] != 0) return false;
  }
  return ip[10] == 0xff && ip[11] == 0xff;
}

std::optional<Ip6> parseIp(std::string_view text) {
  if (text.empty() || text.size() > 63) return std::nullopt;
  char buf[64];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  std::array<uint8_t, 4> v4{};
  if (inet_pton(AF_INET, buf, v4.data()) == 1) return mapV4(v4);
  Ip6 v6{};
  if (inet_pton(AF_INET6, buf, v6.data()) == 1) return v6;
  return std::nullopt;
}

std::string ipToString(const Ip6& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (isMappedV4(ip)) {
    inet_ntop(AF_INET, &ip[12], buf, sizeof buf);
  } else {
    inet_ntop(AF_INET6, ip.data(), buf, sizeof buf);
  }
  return buf;
}

std::optional<Cidr> Cidr::parse(std::string_view text, std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<Cidr> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  std::string_view addr = text;
  std::optional<int> len;
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    addr = text.substr(0, slash);
    std::string_view l = text.substr(slash + 1);
    int v = -1;
    auto [p, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
    if (l.empty() || ec != std::errc() || p != l.data() + l.size()) {
      return fail("bad prefix length '" + std::string(l) + "'");
    }
    len = v;
  }
  auto ip = parseIp(addr);
  if (!ip) return fail("'" + std::string(addr) + "' is not an IPv4 or IPv6 address");
  Cidr c;
  c.addr = *ip;
  c.v4 = addr.find(':') == std::string_view::npos;
  int max = c.v4 ? 32 : 128;
  if (len && (*len < 0 || *len > max)) {
    return fail("prefix length " + std::to_string(*len) + " out of range 0.." +
                std::to_string(max));
  }
  int l = len.value_or(max);
  c.prefix_len = c.v4 ? 96 + l : l;
  for (int bit = c.prefix_len; bit < 128; ++bit) {
    if (c.addr[bit / 8] & (0x80 >> (bit % 8))) {
      return fail("host bits set in '" + std::string(text) + "' (did you mean " +
                  [&] {
                    Cidr fixed = c;
                    for (int b = c.prefix_len; b < 128; ++b) fixed.addr[b / 8] &= ~(0x80 >> (b % 8));
                    return fixed.toString();
                  }() +
                  "?)");
    }
  }
  return c;
}

bool Cidr::contains(const Ip6& ip) const {
  int full = prefix_len / 8;
  if (std::memcmp(addr.data(), ip.data(), full) != 0) return false;
  int rem = prefix_len % 8;
  if (rem == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rem));
  return (addr[full] & mask) == (ip[full] & mask);
}

std::string Cidr::toString() const {
  int shown = v4 ? prefix_len - 96 : prefix_len;
  return ipToString(addr) + "/" + std::to_string(shown);
}

}  // namespace sv::policy
