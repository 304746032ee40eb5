// Cidr: an IPv4 or IPv6 address block. IPv4 is stored as IPv4-mapped IPv6
// (::ffff:a.b.c.d/96+n) so one matcher serves both families and a v4-mapped
// v6 connect is judged exactly like the v4 one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sv::policy {

using Ip6 = std::array<uint8_t, 16>;

struct Cidr {
  Ip6 addr{};
  int prefix_len = 0;  // 0..128, over the mapped form
  bool v4 = false;     // written as IPv4

  // "10.0.0.0/8", "127.0.0.1", "::1", "fd00::/8". nullopt when malformed
  // (sets *error), including host bits set beyond the prefix.
  static std::optional<Cidr> parse(std::string_view text, std::string* error);
  bool contains(const Ip6& ip) const;
  std::string toString() const;
};

// Maps an IPv4 address (network byte order bytes) into the IPv6 space.
Ip6 mapV4(const std::array<uint8_t, 4>& v4);
// Parses a literal IPv4 or IPv6 address into the mapped form.
std::optional<Ip6> parseIp(std::string_view text);
std::string ipToString(const Ip6& ip);

}  // namespace sv::policy
