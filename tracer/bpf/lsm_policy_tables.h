// LsmPolicyTables: the versioned policy the BPF-LSM programs decide with
// (see bpf/maps/lsm_maps.h for the kernel's side).
//
// install() writes a plan into fresh inner maps, stores them under the next
// version number in every outer map, and only then makes that version
// current with one map update, so no decision ever sees half a policy. The
// version before stays (a decision may have read its number just before the
// update); older ones are removed. Profile and rule names keep their indices
// across versions (policy::renumberLsmPlan): tasks hold profile indices and
// queued events rule indices of whichever version was current.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "common/result.h"
#include "policy/compile_lsm.h"

namespace sv::tracer {

// The skeleton's maps the tables live in (fds owned by the skeleton).
struct LsmPolicyMaps {
  int current = -1, header = -1, trans = -1, states = -1, outcomes = -1, net_allow = -1;
};

class LsmPolicyTables {
 public:
  explicit LsmPolicyTables(LsmPolicyMaps maps) : maps_(maps) {}

  // Makes `plan` the policy of every later decision. `audit`: report
  // would-deny, enforce nothing. On failure the current version stays.
  Status install(const policy::LsmPlan& plan, bool audit);

  // The current version (0 before the first install). Thread-safe, as are
  // the name lookups below ("" for an index no version used).
  uint32_t version() const;
  const std::string& ruleIdAt(uint32_t rule_index) const;
  const std::string& profileAt(uint32_t profile) const;
  // The index the tables hold for profile `name`; nullopt for none.
  std::optional<uint32_t> profileIndex(std::string_view name) const;
  size_t profileCount() const;

 private:
  LsmPolicyMaps maps_;
  std::mutex install_mu_;              // one install at a time
  mutable std::shared_mutex names_mu_;  // names only grow; deque keeps references valid
  std::deque<std::string> rule_ids_, profiles_;
  uint32_t version_ = 0;  // under names_mu_
};

}  // namespace sv::tracer
