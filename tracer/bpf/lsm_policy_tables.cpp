// LsmPolicyTables implementation: build one version's inner maps, publish it.
#include "tracer/bpf/lsm_policy_tables.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>

#include <algorithm>
#include <cstring>

#include "common/unique_fd.h"
#include "policy/engine.h"
#include "shared/lsm_abi.h"
#include "shared/net_abi.h"
#include "tracer/bpf/net_filter.h"

namespace sv::tracer {
namespace {

static_assert(sizeof(sv_lsm_policy) == 32 + 4 * (SV_LSM_MAX_PROFILES * SV_LSM_NUM_OPS) +
                                           4 * SV_LSM_MAX_PROFILES + 256,
              "policy header ABI");

// The network allowlists of every profile as LPM entries keyed by (profile,
// address), with rule indices into `rule_ids` (extended as needed).
Result<std::vector<std::pair<sv_lsm_net_key, sv_net_allow_value>>> netEntries(
    const policy::LsmPlan& plan, std::vector<std::string>& rule_ids) {
  std::vector<std::pair<sv_lsm_net_key, sv_net_allow_value>> entries;
  for (size_t p = 0; p < plan.profiles.size(); ++p) {
    auto image = buildNetAllowImage(plan.network[p]);
    if (!image.ok()) return image.error();
    for (const auto& e : image->entries) {
      sv_lsm_net_key key{};
      key.prefixlen = 32 + static_cast<uint32_t>(e.prefix_len);
      key.profile_be = htonl(static_cast<uint32_t>(p));
      std::memcpy(key.addr, e.addr.data(), 16);
      // The kernel takes the first matching range: order them by rule
      // priority (the image numbers rules in plan order, which is priority
      // order), not by port, so a specific rule is not shadowed by loopback.
      auto ranges = e.ranges;
      std::stable_sort(
          ranges.begin(), ranges.end(),
          [](const NetPortRange& a, const NetPortRange& b) { return a.rule_index < b.rule_index; });
      sv_net_allow_value v{};
      v.count = static_cast<uint32_t>(std::min<size_t>(ranges.size(), SV_NET_MAX_PORT_RANGES));
      for (size_t i = 0; i < v.count; ++i) {
        v.ranges[i] = {ranges[i].lo, ranges[i].hi,
                       policy::lsmNameIndex(rule_ids, image->rule_ids[ranges[i].rule_index])};
      }
      entries.emplace_back(key, v);
    }
  }
  return entries;
}

// A fresh inner array holding `values` (one batch update: a policy with
// profiles has a few hundred thousand transitions).
Result<UniqueFd> newArray(const char* name, const void* values, size_t value_size, size_t count,
                          bool sized_per_policy) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = sized_per_policy ? static_cast<__u32>(BPF_F_INNER_MAP) : 0u);
  UniqueFd fd(bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(uint32_t),
                             static_cast<uint32_t>(value_size),
                             static_cast<uint32_t>(std::max<size_t>(count, 1)), &opts));
  if (!fd) return errnoError(std::string("bpf-lsm: create table ") + name);
  std::vector<uint32_t> keys(count);
  for (size_t i = 0; i < count; ++i) keys[i] = static_cast<uint32_t>(i);
  __u32 n = static_cast<__u32>(count);
  if (count && (bpf_map_update_batch(fd.get(), keys.data(), values, &n, nullptr) != 0 || n != count))
    return errnoError(std::string("bpf-lsm: fill table ") + name);
  return fd;
}

// The state `to` with the final flag of the state it names: the kernel's
// walk then stops without reading the state table at every byte.
uint32_t withFinal(const policy::LsmPlan& plan, uint32_t to) {
  return to | (plan.states[to] & policy::kLsmStateFinal);
}

}  // namespace

Status LsmPolicyTables::install(const policy::LsmPlan& input, bool audit) {
  std::lock_guard install_lock(install_mu_);
  std::vector<std::string> profiles, rule_ids;
  {
    std::shared_lock lock(names_mu_);
    profiles.assign(profiles_.begin(), profiles_.end());
    rule_ids.assign(rule_ids_.begin(), rule_ids_.end());
  }
  policy::LsmPlan plan = policy::renumberLsmPlan(input, std::move(profiles), std::move(rule_ids));
  if (plan.profiles.size() > SV_LSM_MAX_PROFILES || plan.num_classes == 0 ||
      plan.num_classes > SV_LSM_MAX_CLASSES || plan.states.empty() ||
      plan.states.size() > policy::kLsmStateOutcomeMask ||
      plan.states.size() * plan.num_classes > UINT32_MAX ||
      plan.transitions.size() != plan.states.size() * plan.num_classes ||
      plan.starts.size() != plan.profiles.size() * SV_LSM_NUM_OPS)
    return Error{EINVAL, "bpf-lsm: malformed or too large plan (" + policy::lsmSummary(plan) +
                             "; at most " + std::to_string(SV_LSM_MAX_PROFILES) +
                             " profiles over all versions)"};
  for (uint32_t t : plan.transitions)
    if (t >= plan.states.size()) return Error{EINVAL, "bpf-lsm: transition to no state"};
  for (uint32_t s : plan.starts)
    if (s >= plan.states.size()) return Error{EINVAL, "bpf-lsm: start at no state"};

  auto net = netEntries(plan, plan.rule_ids);
  if (!net.ok()) return net.error();
  if (net->size() > 4096) return Error{E2BIG, "bpf-lsm: more than 4096 network entries"};

  const uint32_t version = this->version() + 1;
  if (version >= SV_LSM_MAX_VERSIONS)
    return Error{ENOSPC, "bpf-lsm: this filter took its " +
                             std::to_string(SV_LSM_MAX_VERSIONS - 1) +
                             " policy versions; load a new one"};
  sv_lsm_policy header{};
  header.version = version;
  header.flags = audit || plan.audit_mode ? SV_LSM_POL_AUDIT : 0;
  header.nclasses = plan.num_classes;
  header.nprofiles = static_cast<uint32_t>(plan.profiles.size());
  header.rule_net_none = policy::lsmNameIndex(plan.rule_ids, policy::kDenyNetworkNone);
  header.rule_net_all = policy::lsmNameIndex(plan.rule_ids, policy::kAllowAll);
  header.rule_net_default = policy::lsmNameIndex(plan.rule_ids, policy::kDefaultDenyConnect);
  for (size_t i = 0; i < plan.starts.size(); ++i) header.starts[i] = withFinal(plan, plan.starts[i]);
  for (size_t p = 0; p < plan.profiles.size(); ++p)
    header.net_mode[p] = static_cast<uint32_t>(plan.network[p].mode);
  std::memcpy(header.byte_class, plan.byte_class.data(), sizeof(header.byte_class));

  std::vector<uint32_t> trans(plan.transitions.size());
  for (size_t i = 0; i < trans.size(); ++i) trans[i] = withFinal(plan, plan.transitions[i]);
  std::vector<sv_lsm_outcome> outcomes(plan.outcomes.size());
  for (size_t i = 0; i < outcomes.size(); ++i)
    outcomes[i] = {plan.outcomes[i].verdict, {0, 0, 0}, plan.outcomes[i].value};

  auto header_fd = newArray("sv_lsm_header", &header, sizeof(header), 1, false);
  if (!header_fd) return header_fd.error();
  auto trans_fd = newArray("sv_lsm_trans", trans.data(), 4, trans.size(), true);
  if (!trans_fd) return trans_fd.error();
  auto states_fd = newArray("sv_lsm_states", plan.states.data(), 4, plan.states.size(), true);
  if (!states_fd) return states_fd.error();
  auto outcomes_fd =
      newArray("sv_lsm_outcomes", outcomes.data(), sizeof(sv_lsm_outcome), outcomes.size(), true);
  if (!outcomes_fd) return outcomes_fd.error();
  LIBBPF_OPTS(bpf_map_create_opts, lpm_opts, .map_flags = BPF_F_NO_PREALLOC);
  UniqueFd net_fd(bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "sv_lsm_net", sizeof(sv_lsm_net_key),
                                 sizeof(sv_net_allow_value), 4096, &lpm_opts));
  if (!net_fd) return errnoError("bpf-lsm: create network table");
  for (const auto& [key, value] : *net) {
    if (bpf_map_update_elem(net_fd.get(), &key, &value, BPF_ANY) != 0)
      return errnoError("bpf-lsm: network allowlist entry");
  }

  // Names first: events of the new version may name them as soon as it is current.
  {
    std::unique_lock lock(names_mu_);
    for (size_t i = profiles_.size(); i < plan.profiles.size(); ++i)
      profiles_.push_back(plan.profiles[i]);
    for (size_t i = rule_ids_.size(); i < plan.rule_ids.size(); ++i)
      rule_ids_.push_back(plan.rule_ids[i]);
  }
  const std::pair<int, int> tables[] = {{maps_.header, header_fd->get()},
                                        {maps_.trans, trans_fd->get()},
                                        {maps_.states, states_fd->get()},
                                        {maps_.outcomes, outcomes_fd->get()},
                                        {maps_.net_allow, net_fd.get()}};
  for (size_t i = 0; i < std::size(tables); ++i) {
    int inner = tables[i].second;
    if (bpf_map_update_elem(tables[i].first, &version, &inner, BPF_ANY) != 0) {
      Error err = errnoError("bpf-lsm: store policy version " + std::to_string(version));
      for (size_t j = 0; j < i; ++j) bpf_map_delete_elem(tables[j].first, &version);
      return err;
    }
  }
  const uint32_t zero = 0;
  if (bpf_map_update_elem(maps_.current, &zero, &version, BPF_ANY) != 0) {
    Error err = errnoError("bpf-lsm: make policy version " + std::to_string(version) + " current");
    for (const auto& t : tables) bpf_map_delete_elem(t.first, &version);
    return err;
  }
  {
    std::unique_lock lock(names_mu_);
    version_ = version;
  }
  // The version before this one stays for decisions that read the number
  // just before the update; the one before that is retired.
  if (version > 2) {
    const uint32_t retired = version - 2;
    for (const auto& t : tables) bpf_map_delete_elem(t.first, &retired);
  }
  return {};
}

uint32_t LsmPolicyTables::version() const {
  std::shared_lock lock(names_mu_);
  return version_;
}

const std::string& LsmPolicyTables::ruleIdAt(uint32_t rule_index) const {
  static const std::string kNone;
  std::shared_lock lock(names_mu_);
  return rule_index < rule_ids_.size() ? rule_ids_[rule_index] : kNone;
}

const std::string& LsmPolicyTables::profileAt(uint32_t profile) const {
  static const std::string kBase;
  std::shared_lock lock(names_mu_);
  return profile < profiles_.size() ? profiles_[profile] : kBase;
}

std::optional<uint32_t> LsmPolicyTables::profileIndex(std::string_view name) const {
  std::shared_lock lock(names_mu_);
  for (size_t i = 0; i < profiles_.size(); ++i)
    if (profiles_[i] == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

size_t LsmPolicyTables::profileCount() const {
  std::shared_lock lock(names_mu_);
  return profiles_.size();
}

}  // namespace sv::tracer
