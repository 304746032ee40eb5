// networkFloor(): the loosest network plan any process of the tree can have.
#include <algorithm>

#include "policy/compile.h"

namespace sv::policy {

NetworkPlan networkFloor(const CompiledPolicy& compiled) {
  NetworkPlan floor = compiled.network;
  for (const auto& [name, plan] : compiled.profile_network) {
    // None < Localhost < Allowlist < All; the two middle modes are both an
    // allowlist to the programs, so the union of their entries decides.
    floor.mode = std::max(floor.mode, plan.mode);
    for (const NetEntry& e : plan.entries)
      if (std::find(floor.entries.begin(), floor.entries.end(), e) == floor.entries.end())
        floor.entries.push_back(e);
    for (const NetHost& h : plan.hosts)
      if (std::find(floor.hosts.begin(), floor.hosts.end(), h) == floor.hosts.end())
        floor.hosts.push_back(h);
  }
  std::sort(floor.hosts.begin(), floor.hosts.end());
  return floor;
}

}  // namespace sv::policy
