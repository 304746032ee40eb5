// The engine's side of the differential (expected.h).
//
// Which events a request yields follows the user-notify handler
// (supervisor/notify/notify_handler.cpp), which the host and ptrace backends
// share: one event per decision, allowed ones included at audit level
// `decisions`; a rename or link is two decisions (the source's name, then the
// destination's), the second only when the first allowed; connects are one
// event of the cgroup programs each.
#include "tests/differential/expected.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>

#include "policy/cidr.h"
#include "policy/path.h"

namespace sv::differential {
namespace {

using policy::Operation;
using policy::Verdict;

std::string physical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string fileOperation(Kind kind) {
  switch (kind) {
    case Kind::OpenRead:
    case Kind::OpenPath:
      return "open";
    case Kind::OpenWrite:
      return "write";
    case Kind::Create:
      return "create";
    case Kind::Chmod:
      return "chmod";
    case Kind::Symlink:
      return "symlink";
    case Kind::Unlink:
      return "unlink";
    case Kind::Mkdir:
      return "mkdir";
    case Kind::Rmdir:
      return "rmdir";
    case Kind::Rename:
      return "rename";
    case Kind::Link:
      return "link";
    default:
      return "?";
  }
}

}  // namespace

std::string_view verdictName(Verdict v) { return v == Verdict::Allow ? "allow" : "deny"; }

std::string Oracle::resolve(int dir, const std::string& path, bool follow_final) const {
  const std::string base = dir == kCwd ? fixture_.workspace() : fixture_.dirfdTable().at(dir);
  const std::string abs = path.starts_with('/') ? path : base + "/" + path;
  const size_t slash = abs.rfind('/');
  const std::string parent = slash == 0 ? "/" : abs.substr(0, slash);
  const std::string name = abs.substr(slash + 1);
  const std::string real_parent = physical(parent);
  if (real_parent.empty()) return policy::normalizePath("/", abs);  // no such directory
  const std::string joined = real_parent == "/" ? "/" + name : real_parent + "/" + name;
  struct stat st {};
  if (follow_final && ::lstat(joined.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    const std::string target = physical(joined);
    if (!target.empty()) return target;
  }
  return joined;
}

policy::Decision Oracle::engineDecision(Operation op, const std::string& path) const {
  policy::Request r;
  r.op = op;
  r.path = path;
  return engine_.decide(r);
}

EventKey Oracle::decide(Operation op, const std::string& what, const std::string& path,
                        Expectation* into) const {
  const policy::Decision d = engineDecision(op, path);
  into->verdict = d.verdict;
  into->rule = std::string(d.rule_id);
  EventKey ev{what, std::string(verdictName(d.verdict)), std::string(d.rule_id), path};
  into->events.push_back(ev);
  return ev;
}

Expectation Oracle::expect(const Request& q) const {
  Expectation e;
  switch (q.kind) {
    case Kind::OpenPath:
      // No decision: an O_PATH handle reads and writes nothing, so no backend
      // judges it (docs/enforcement.md, "O_PATH handles"); what is done
      // through it later is judged by the path it reaches.
      e.verdict = Verdict::Allow;
      return e;
    case Kind::OpenRead:
    case Kind::OpenWrite:
    case Kind::Create:
    case Kind::Chmod:
    case Kind::Unlink:
    case Kind::Mkdir:
    case Kind::Rmdir: {
      // open, open-for-write and chmod follow a final symlink; O_CREAT|O_EXCL,
      // unlink, rmdir and mkdir act on the name itself.
      const bool read = q.kind == Kind::OpenRead;
      const bool follow = read || q.kind == Kind::OpenWrite || q.kind == Kind::Chmod;
      const std::string p = resolve(q.dir, q.path, follow);
      decide(
          read ? Operation::Read : Operation::Write,
          "file " + fileOperation(q.kind) + " " + p, p, &e);
      return e;
    }
    case Kind::Symlink: {
      // A write to the link's own name; its target is judged when opened.
      const std::string p = resolve(q.dir, q.path, false);
      decide(Operation::Write, "file symlink " + p + " " + q.path2, p, &e);
      return e;
    }
    case Kind::Rename:
    case Kind::Link: {
      const std::string from = resolve(q.dir, q.path, false), to = resolve(q.dir2, q.path2, false);
      const std::string op = fileOperation(q.kind);
      if (decide(Operation::Write, "file " + op + " " + from + " " + to, from, &e).decision ==
          "deny")
        return e;
      if (decide(Operation::Write, "file " + op + " " + to + " " + from, to, &e).decision ==
          "deny")
        return e;
      // A file a deny rule keeps from being read gets no name it could be
      // read under (NotifyHandler::readRuleFollows); only a refusal is an event.
      struct stat st {};
      if (::lstat(from.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return e;  // opens follow it
      if (engineDecision(Operation::Read, from).deniedByRule() &&
          !engineDecision(Operation::Read, to).deniedByRule())
        decide(Operation::Read, "file " + op + " " + from + " " + to, from, &e);
      return e;
    }
    case Kind::Exec: {
      const std::string p = resolve(kCwd, q.path, true);
      decide(Operation::Exec, "exec " + p, p, &e);
      return e;
    }
    case Kind::Tcp4:
    case Kind::Udp4:
    case Kind::Udp4Send:
    case Kind::Tcp6: {
      policy::Request r;
      r.op = Operation::Connect;
      r.ip = policy::parseIp(q.path).value_or(policy::Ip6{});
      r.port = static_cast<uint16_t>(q.port);
      const policy::Decision d = engine_.decide(r);
      e.verdict = d.verdict;
      e.rule = std::string(d.rule_id);
      const bool udp = q.kind == Kind::Udp4 || q.kind == Kind::Udp4Send;
      const std::string destination =
          policy::ipToString(r.ip) + " " + std::to_string(q.port);
      e.events.push_back(
          {std::string(q.kind == Kind::Udp4Send ? "network sendmsg " : "network connect ") +
               (udp ? "udp " : "tcp ") + destination,
           std::string(verdictName(d.verdict)), e.rule, destination});
      return e;
    }
    case Kind::Unix: {
      // Connecting needs write permission on the socket file: the engine's
      // verdict is that of a write to the socket the path reaches (symlinks
      // followed, relative to the cwd), which is what bpf-lsm judges
      // (docs/network.md, "The peer socket under bpf-lsm").
      const std::string p = resolve(kCwd, q.path, true);
      policy::Request r;
      r.op = Operation::Write;
      r.path = p;
      const policy::Decision d = engine_.decide(r);
      e.verdict = d.verdict;
      e.rule = d.rule_id == policy::kDefaultDenyWrite ? std::string(policy::kDefaultDenyUnixSocket)
                                                      : std::string(d.rule_id);
      e.events.push_back(
          {"network connect unix " + q.path, std::string(verdictName(d.verdict)), e.rule, p});
      return e;
    }
  }
  return e;
}

}  // namespace sv::differential
