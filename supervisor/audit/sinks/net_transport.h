// Network transports for syslog sinks: UDP, TCP and TLS (GnuTLS), each
// non-blocking and reconnecting with exponential backoff.
//
// Address: udp://HOST:PORT, tcp://HOST:PORT, tls://HOST:PORT; HOST is an IPv4
// address, [IPv6] or a name (resolved once, when the sink is opened). TLS
// verifies the receiver's certificate against ca_file (the system trust
// store when empty) and its name against HOST.
//
// State: down → connecting (non-blocking connect) → [TLS handshake] → up. A
// failed attempt or a broken connection waits 100 ms, doubling to 5 s, before
// the next try; up() is called from the loop's flush(), so no thread ever
// waits on the network. While up, an idle TCP/TLS connection is checked for
// EOF (the receiver closed it) before bytes are trusted to it.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "supervisor/audit/sinks/transport.h"

namespace sv::supervisor::audit {

enum class NetProto { kUdp, kTcp, kTls };

struct NetAddress {
  NetProto proto = NetProto::kTcp;
  std::string host;  // without brackets
  int port = 0;
};

// Parses udp|tcp|tls://HOST:PORT.
Result<NetAddress> parseNetAddress(const std::string& url);

struct NetOptions {
  std::string ca_file;  // tls: trust anchors (PEM); empty: system trust
  size_t replay_bytes = 4u << 20;  // tcp/tls: resent after a reconnect
};

// Resolves the address; does not connect (the first up() does).
Result<std::unique_ptr<Transport>> openNetTransport(const std::string& url, NetOptions options);

}  // namespace sv::supervisor::audit
