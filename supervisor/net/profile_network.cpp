// ProfileNetwork: see profile_network.h.
#include "supervisor/net/profile_network.h"

#include <utility>

namespace sv::supervisor {

bool ProfileNetwork::anyOwnRules(const policy::Policy& policy) {
  for (const auto& [name, profile] : policy.profiles) {
    if (profile.network.mode || !profile.network.allow.empty()) return true;
  }
  return false;
}

Result<ProfileNetwork> ProfileNetwork::bind(
    tracer::SessionCgroup& cgroup, tracer::NetFilter& net,
    const std::map<std::string, policy::NetworkPlan>& plans) {
  std::set<std::string, std::less<>> profiles;
  std::vector<uint64_t> ids;
  for (const auto& [name, plan] : plans) {
    auto path = cgroup.addChild("profile-" + name);
    if (!path) return path.error();
    auto id = tracer::cgroupId(*path);
    if (!id) return id.error();
    SV_TRY(net.bindCgroup(*id, name));
    profiles.insert(name);
    ids.push_back(*id);
  }
  return ProfileNetwork(cgroup, std::move(profiles), std::move(ids));
}

std::string ProfileNetwork::cgroupOf(std::string_view profile) const {
  return profiles_.count(profile) ? "profile-" + std::string(profile) : std::string();
}

Status ProfileNetwork::onSwitch(pid_t tgid, std::string_view from, std::string_view to) const {
  std::string target = cgroupOf(to);
  if (target == cgroupOf(from)) return {};  // same plan: no move, no RCU grace period
  return cgroup_->moveProcess(target, tgid);
}

}  // namespace sv::supervisor
