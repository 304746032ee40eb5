// ProfileNetwork: per-profile network plans, enforced in the kernel.
//
// The network programs stay attached once, to the session cgroup; they pick a
// process's plan by its cgroup. Each profile gets a child cgroup
// `<session>/profile-<name>` bound to its plan (compile()'s profile_network:
// a profile without network rules has the base rules, and its own cgroup
// still names it in network events), and a process whose exec switches its
// profile is moved there while the exec is held. Children inherit the cgroup, as they inherit
// the profile in the Engine (docs/network.md "Per-profile network rules").
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/compile.h"
#include "policy/model.h"
#include "tracer/cgroup.h"
#include "tracer/bpf/net_filter.h"

namespace sv::supervisor {

class ProfileNetwork {
 public:
  // Whether any profile sets a network mode or entries of its own.
  static bool anyOwnRules(const policy::Policy& policy);

  // Creates profile-<name> under the session cgroup for each of `plans` and
  // binds it to that profile's plan in `net` (loaded with the same plans).
  static Result<ProfileNetwork> bind(tracer::SessionCgroup& cgroup, tracer::NetFilter& net,
                                     const std::map<std::string, policy::NetworkPlan>& plans);

  // A process's profile changes from `from` to `to` ("" = base): moves its
  // thread group to the cgroup of `to` when that is not the one of `from`.
  Status onSwitch(pid_t tgid, std::string_view from, std::string_view to) const;

  // The child cgroups' ids (a BPF LSM judges tasks by exact cgroup: register them).
  const std::vector<uint64_t>& cgroupIds() const { return cgroup_ids_; }

 private:
  ProfileNetwork(tracer::SessionCgroup& cgroup, std::set<std::string, std::less<>> profiles,
                 std::vector<uint64_t> cgroup_ids)
      : cgroup_(&cgroup), profiles_(std::move(profiles)), cgroup_ids_(std::move(cgroup_ids)) {}
  // "" (the session cgroup) or profile-<name>.
  std::string cgroupOf(std::string_view profile) const;

  tracer::SessionCgroup* cgroup_;
  std::set<std::string, std::less<>> profiles_;
  std::vector<uint64_t> cgroup_ids_;
};

}  // namespace sv::supervisor
