/* Network escape attempts towards a test host the policy does not allow.
 *
 *   escape_net CASE IP PORT      (CASE: udp, tcp)
 *   escape_net abstract NAME     (an abstract unix socket listening outside)
 *   escape_net unix PATH         (a pathname unix socket listening outside)
 *   escape_net connect-race IP PORT
 *
 * udp: sendto and sendmsg without connect, sendto to the host from a UDP
 * socket connected to loopback, and the same through an AF_INET6 socket with
 * the IPv4-mapped address (::ffff:IP). tcp: connect, IPv4-mapped connect,
 * and a TCP Fast Open sendto(MSG_FASTOPEN), which connects and sends in one
 * call. Each attempt sends "PWNED"; the test host must see none of it.
 * connect-race: a thread flips the address connect() reads between a
 * loopback listener of the attack's own (allowed under code-sandbox) and the
 * test host, 20,000 rounds; no connect may reach the host, whatever the timing
 * (the cgroup programs judge the kernel's copy of the address).
 * An attempt whose socket (or loopback connect) is refused already prints
 * "not tried: ..." instead (strict refuses every inet socket).
 * Exit 0: every attempt failed; 66: one went out; 2: setup failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
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

struct ConnectRace {
  struct sockaddr_in addr; /* what connect() reads, flipped by the thread */
  struct sockaddr_in allowed, host;
  volatile int stop;
};

/* Each address stays a while (a spin of a few µs), so connect() copies
 * either one, or a mix of the two, in about equal measure. */
static void* flipAddress(void* p) {
  struct ConnectRace* r = p;
  while (!r->stop) {
    memcpy((void*)&r->addr, &r->host, sizeof r->addr);
    __asm__ volatile("" ::: "memory"); /* the store is for the other thread: keep it */
    for (volatile int i = 0; i < 2000; i++) {
    }
    memcpy((void*)&r->addr, &r->allowed, sizeof r->addr);
    __asm__ volatile("" ::: "memory");
    for (volatile int i = 0; i < 2000; i++) {
    }
  }
  return NULL;
}

static void connectRace(const char* ip, int port) {
  enum { kRounds = 20000 };
  int listener = attackSocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, "connect race");
  if (listener < 0) return;
  struct ConnectRace r;
  memset(&r, 0, sizeof r);
  r.allowed = v4("127.0.0.1", 0);
  socklen_t len = sizeof r.allowed;
  setupOk("bind loopback", bind(listener, (struct sockaddr*)&r.allowed, sizeof r.allowed));
  setupOk("listen", listen(listener, 4096));
  setupOk("getsockname", getsockname(listener, (struct sockaddr*)&r.allowed, &len));
  r.host = v4(ip, port);
  r.addr = r.allowed;
  pthread_t t;
  setupOk("pthread_create", -pthread_create(&t, NULL, flipAddress, &r));
  int loopback = 0, denied = 0, other = 0, reached = 0;
  for (int i = 0; i < kRounds; i++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) break;
    if (connect(s, (struct sockaddr*)&r.addr, sizeof r.addr) == 0) {
      struct sockaddr_in peer;
      socklen_t plen = sizeof peer;
      if (getpeername(s, (struct sockaddr*)&peer, &plen) == 0 &&
          peer.sin_addr.s_addr == r.host.sin_addr.s_addr) {
        reached++;
        (void)!write(s, "PWNED9", 6);
      } else {
        loopback++;
      }
    } else if (errno == EPERM) {
      denied++;
    } else {
      other++;
    }
    close(s);
    for (int c; (c = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) close(c);
  }
  r.stop = 1;
  pthread_join(t, NULL);
  close(listener);
  printf("connect race: %d rounds to loopback, %d denied (EPERM), %d other errors, %d reached "
         "the test host\n",
         loopback, denied, other, reached);
  if (reached) {
    printf("ESCAPED a racing connect reached the test host\n");
    g_escaped = 1;
  }
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
  else if (argc >= 4 && !strcmp(argv[1], "connect-race"))
    connectRace(argv[2], atoi(argv[3]));
  else {
    fprintf(stderr,
            "usage: escape_net udp|tcp|connect-race IP PORT | abstract NAME | unix PATH\n");
    return kSetupFailed;
  }
  return finish();
}
