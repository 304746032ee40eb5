// The expected side of the differential: what policy::Engine::decide says of
// each request, and the audit events a backend should write for it.
//
// A request names a path as the program passes it (relative, through `..`,
// symlinks or a dirfd); the engine takes the absolute physical path the
// supervisor resolves it to (docs/enforcement.md, "Why a user-notify decision
// can't be raced"). The oracle resolves it the same way against the fixture,
// which the request templates leave unchanged (generator.h).
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "policy/engine.h"
#include "tests/differential/fixture.h"
#include "tests/differential/request.h"

namespace sv::differential {

// One audit event as the comparison sees it: what it is about (category,
// operation, paths or destination) and what was decided by which rule.
struct EventKey {
  // "file rename /ws/a /ws/b", "file open /ws/a (O_PATH)", "exec /usr/bin/id",
  // "network connect tcp 127.0.0.1 20042", "network connect unix /ws/sock"
  std::string what;
  std::string decision;  // "allow" / "deny"
  std::string rule;      // rule id
  // The path or destination the rule was judged on: the decided one of a
  // rename's two names, a socket's resolved path, "tcp 127.0.0.1 20042".
  std::string subject;
  bool operator<(const EventKey& o) const {
    return std::tie(what, decision, rule) < std::tie(o.what, o.decision, o.rule);
  }
  bool operator==(const EventKey& o) const = default;
};

struct Expectation {
  policy::Verdict verdict = policy::Verdict::Deny;
  std::string rule;  // of the decision that settled the request
  std::vector<EventKey> events;
};

class Oracle {
 public:
  Oracle(const policy::Engine& engine, const Fixture& fixture)
      : engine_(engine), fixture_(fixture) {}

  Expectation expect(const Request& request) const;

 private:
  // The physical absolute path `path` names from `dir`; the final component
  // is followed when `follow_final` (as open and exec do) and it is a symlink.
  std::string resolve(int dir, const std::string& path, bool follow_final) const;
  EventKey decide(policy::Operation op, const std::string& what, const std::string& path,
                  Expectation* into) const;
  policy::Decision engineDecision(policy::Operation op, const std::string& path) const;

  const policy::Engine& engine_;
  const Fixture& fixture_;
};

std::string_view verdictName(policy::Verdict v);

}  // namespace sv::differential
