// The file tree the differential requests run over, made fresh in a temp dir
// for each backend and removed afterwards:
//
//   ROOT/ws/         the workspace (writable root, the runner's cwd): src/ with
//                    files and a subdir, .env, .env.local, .git/{config,HEAD,
//                    hooks/pre-commit}, protected/ (deny-write), secrets/
//                    (deny-read), tools/{ok-prog,blocked-prog} (copies of the
//                    runner), symlinks in (link-env, link-src, link-ok-prog,
//                    ...) and out (link-out -> ../outside, link-hostname ->
//                    /etc/hostname, link-true -> /usr/bin/true), listening
//                    unix sockets (sock, .env.sock; unix_listeners.h)
//   ROOT/outside/    readable, not writable: a file, a symlink back in
//                    (link-in -> ../ws/.env), a program, a listening socket
//   ROOT/shared/     a second writable root, with a listening socket
//   ROOT/meta/       the policy, the request list, the audit file, outputs
//
// ROOT is below /tmp (in the VM guest: its tmpfs scratch dir), which the test
// policy does not make writable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "tests/differential/unix_listeners.h"

namespace sv::differential {

class Fixture {
 public:
  // Builds the tree in a new directory below `parent`; `program` (the
  // runner) is copied into it as the workspace's and the outside dir's
  // executables.
  static Result<Fixture> create(const std::string& program, const std::string& parent);

  Fixture(Fixture&& other) noexcept;
  Fixture& operator=(Fixture&&) = delete;
  Fixture(const Fixture&) = delete;
  ~Fixture();

  const std::string& root() const { return root_; }
  std::string workspace() const { return root_ + "/ws"; }
  std::string outside() const { return root_ + "/outside"; }
  std::string shared() const { return root_ + "/shared"; }
  std::string meta() const { return root_ + "/meta"; }

  // The runner opens these before its first request; a request's
  // dirfd D is this table's index D.
  const std::vector<std::string>& dirfdTable() const { return dirfds_; }

  // The test policy (docs/policy.md), with paths of this fixture.
  std::string policyJson() const;

 private:
  explicit Fixture(std::string root);
  std::string root_;
  std::vector<std::string> dirfds_;
  std::unique_ptr<UnixListeners> listeners_;
};

}  // namespace sv::differential
