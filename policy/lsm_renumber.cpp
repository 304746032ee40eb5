// renumberLsmPlan(): a plan in the numbering of the policy versions before it.
//
// The kernel keeps profile indices in task storage and the ring buffer keeps
// rule indices in queued events, both from whichever policy version was
// current. So a swapped-in policy keeps every name's index and appends the
// names it adds; a profile it dropped gets the base's tables, which is how
// Engine::decide treats a profile it does not know.
#include <algorithm>

#include "policy/compile_lsm.h"

namespace sv::policy {
uint32_t lsmNameIndex(std::vector<std::string>& names, std::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) return static_cast<uint32_t>(it - names.begin());
  names.emplace_back(name);
  return static_cast<uint32_t>(names.size() - 1);
}

LsmPlan renumberLsmPlan(const LsmPlan& plan, std::vector<std::string> profiles,
                        std::vector<std::string> rule_ids) {
  LsmPlan out = plan;
  if (profiles.empty()) profiles.push_back("");  // index 0 is always the base
  // Where each of the plan's profiles and rules lands.
  std::vector<uint32_t> profile_to(plan.profiles.size()), rule_to(plan.rule_ids.size());
  for (size_t i = 0; i < plan.profiles.size(); ++i) profile_to[i] = lsmNameIndex(profiles, plan.profiles[i]);
  for (size_t i = 0; i < plan.rule_ids.size(); ++i) rule_to[i] = lsmNameIndex(rule_ids, plan.rule_ids[i]);

  // Every profile starts as the base (a dropped profile stays that way).
  out.starts.clear();
  out.network.clear();
  for (size_t p = 0; p < profiles.size(); ++p) {
    out.starts.insert(out.starts.end(), plan.starts.begin(), plan.starts.begin() + kLsmNumOps);
    out.network.push_back(plan.network.empty() ? NetworkPlan{} : plan.network[0]);
  }
  for (size_t i = 0; i < plan.profiles.size(); ++i) {
    std::copy_n(plan.starts.begin() + i * kLsmNumOps, kLsmNumOps,
                out.starts.begin() + profile_to[i] * kLsmNumOps);
    if (i < plan.network.size()) out.network[profile_to[i]] = plan.network[i];
  }
  for (LsmOutcome& o : out.outcomes) {
    if (o.verdict == kLsmSwitch) {
      if (o.value < profile_to.size()) o.value = profile_to[o.value];
    } else if (o.verdict != kLsmStay && o.value < rule_to.size()) {
      o.value = rule_to[o.value];
    }
  }
  out.profiles = std::move(profiles);
  out.rule_ids = std::move(rule_ids);
  return out;
}

}  // namespace sv::policy
