/* Network escape attempts towards a test host the policy does not allow.
 *
 *   escape_net CASE IP PORT      (CASE: udp, tcp)
 *   escape_net abstract NAME     (an abstract unix socket listening outside)
 *   escape_net unix PATH         (a pathname unix socket listening outside)
 *
 * udp: sendto and sendmsg without connect, sendto to the host from a UDP
 * socket connected to loopback, and the same through an AF_INET6 socket with
 * the IPv4-mapped address (::ffff:IP). tcp: connect, IPv4-mapped connect,
 * and a TCP Fast Open sendto(MSG_FASTOPEN), which connects and sends in one
 * call. Each attempt sends "PWNED"; the test host must see none of it.
 * An attempt whose socket (or loopback connect) is refused already prints
 * "not tried: ..." instead (strict refuses every inet socket).
 * Exit 0: every attempt failed; 66: one went out; 2: setup failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "attack.h"

static struct sockaddr_in v4(const char* ip, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) setupOk("inet_pton", -1);
  return a;
}

static struct sockaddr_in6 mapped(const char* ip, int port) {
  struct sockaddr_in6 a;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons((uint16_t)port);
  char text[64];
  snprintf(text, sizeof text, "::ffff:%s", ip);
  if (inet_pton(AF_INET6, text, &a.sin6_addr) != 1) setupOk("inet_pton6", -1);
  return a;
}

/* A socket for the attempts that follow, or -1 when making it is refused
 * already (network.mode none, as under strict: the cgroup sock_create
 * program), which blocks all of them; printed as "not tried". */
static int attackSocket(int family, int type, const char* what) {
  int s = socket(family, type | SOCK_CLOEXEC, 0);
  if (s < 0) printf("not tried: %s (socket refused errno=%d)\n", what, errno);
  return s;
}

static void udp(const char* ip, int port) {
  struct sockaddr_in to = v4(ip, port);
  int s = attackSocket(AF_INET, SOCK_DGRAM, "udp sendto, sendmsg, sendmmsg without connect");
  if (s >= 0) {
    mustFail("udp sendto without connect",
             sendto(s, "PWNED1", 6, 0, (struct sockaddr*)&to, sizeof to));
    struct iovec iov = {"PWNED2", 6};
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_name = &to;
    msg.msg_namelen = sizeof to;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    mustFail("udp sendmsg with msg_name", sendmsg(s, &msg, 0));
    struct mmsghdr mm;
    memset(&mm, 0, sizeof mm);
    mm.msg_hdr = msg;
    mustFail("udp sendmmsg", sendmmsg(s, &mm, 1, 0) == 1 ? 1 : -1);
    close(s);
  }

  s = attackSocket(AF_INET, SOCK_DGRAM, "udp sendto on a loopback-connected socket");
  if (s >= 0) {
    struct sockaddr_in lo = v4("127.0.0.1", port);
    if (connect(s, (struct sockaddr*)&lo, sizeof lo) == 0)
      mustFail("udp sendto another address on a loopback-connected socket",
               sendto(s, "PWNED3", 6, 0, (struct sockaddr*)&to, sizeof to));
    else
      printf("not tried: udp sendto on a loopback-connected socket (loopback refused errno=%d)\n",
             errno);
    close(s);
  }

  struct sockaddr_in6 to6 = mapped(ip, port);
  s = attackSocket(AF_INET6, SOCK_DGRAM, "udp6 sendto ::ffff:IP");
  if (s >= 0) {
    mustFail("udp6 sendto ::ffff:IP",
             sendto(s, "PWNED4", 6, 0, (struct sockaddr*)&to6, sizeof to6));
    close(s);
  }
}

static void tcp(const char* ip, int port) {
  struct sockaddr_in to = v4(ip, port);
  int s = attackSocket(AF_INET, SOCK_STREAM, "tcp connect");
  if (s >= 0) {
    long rc = connect(s, (struct sockaddr*)&to, sizeof to);
    mustFail("tcp connect", rc);
    if (rc == 0) (void)!write(s, "PWNED5", 6);
    close(s);
  }

  struct sockaddr_in6 to6 = mapped(ip, port);
  s = attackSocket(AF_INET6, SOCK_STREAM, "tcp6 connect ::ffff:IP");
  if (s >= 0) {
    long rc = connect(s, (struct sockaddr*)&to6, sizeof to6);
    mustFail("tcp6 connect ::ffff:IP", rc);
    if (rc == 0) (void)!write(s, "PWNED6", 6);
    close(s);
  }

  s = attackSocket(AF_INET, SOCK_STREAM, "tcp sendto(MSG_FASTOPEN)");
  if (s >= 0) {
    mustFail("tcp sendto(MSG_FASTOPEN)",
             sendto(s, "PWNED7", 6, MSG_FASTOPEN, (struct sockaddr*)&to, sizeof to));
    close(s);
  }
}

/* abstract: NAME in the abstract namespace (sun_path[0] == '\0'); else a
 * pathname socket. The listener is a stream socket outside the session. */
static void unixConnect(const char* name, int abstract) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  size_t len = strlen(name);
  if (len + 1 >= sizeof a.sun_path) setupOk("name length", -1);
  memcpy(a.sun_path + (abstract ? 1 : 0), name, len);
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  setupOk("unix socket", s);
  long rc = connect(s, (struct sockaddr*)&a, alen);
  mustFail(abstract ? "connect to an abstract socket outside the session"
                    : "connect to a pathname socket outside the session",
           rc);
  if (rc == 0) (void)!write(s, "PWNED8", 6);
  close(s);
}

int main(int argc, char** argv) {
  if (argc >= 4 && !strcmp(argv[1], "udp"))
    udp(argv[2], atoi(argv[3]));
  else if (argc >= 4 && !strcmp(argv[1], "tcp"))
    tcp(argv[2], atoi(argv[3]));
  else if (argc >= 3 && !strcmp(argv[1], "abstract"))
    unixConnect(argv[2], 1);
  else if (argc >= 3 && !strcmp(argv[1], "unix"))
    unixConnect(argv[2], 0);
  else {
    fprintf(stderr, "usage: escape_net udp|tcp IP PORT | abstract NAME | unix PATH\n");
    return kSetupFailed;
  }
  return finish();
}
