// compileLsm(): a Policy to the tables the BPF-LSM programs match paths with.
//
// The kernel cannot run the Glob matcher, so every (profile, operation) pair
// becomes one DFA over the bytes of an absolute, normal path, built by subset
// construction from the same ordered rule lists Engine::decide walks (profile
// rules first, then base rules, then the system paths, then the default
// rule). Each DFA state carries the outcome the path would get if it ended
// there, so first-match-wins and the default rules are resolved here, once;
// the kernel only walks bytes. All DFAs share one byte-class table (bytes no
// pattern tells apart share a column), which keeps the transition table small.
//
// lsmDecide() walks the same tables in user space: the unit tests hold it to
// Engine::decide, and the VM tests hold the kernel to it. Plain values, no
// syscalls (this is the pure policy library). Layout mirrors
// bpf/shared/lsm_abi.h (the loader static_asserts the constants).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "policy/compile.h"
#include "policy/model.h"

namespace sv::policy {

// Connect has no DFA (the network tables decide it); it only labels events.
enum class LsmOp : uint8_t { Read = 0, Write = 1, Exec = 2, Switch = 3, Connect = 4 };
inline constexpr int kLsmNumOps = 4;

inline constexpr uint8_t kLsmDeny = 0, kLsmAllow = 1, kLsmSwitch = 2, kLsmStay = 3;
inline constexpr uint32_t kLsmStateOutcomeMask = 0x3fffffffu;
inline constexpr uint32_t kLsmStateFinal = 0x80000000u;

struct LsmOutcome {
  uint8_t verdict = kLsmDeny;  // kLsm*
  uint32_t value = 0;          // rule index, or profile index for kLsmSwitch
  bool operator==(const LsmOutcome&) const = default;
};

struct LsmPlan {
  // Profile index → name; 0 is the base policy (""). Sorted after the base.
  std::vector<std::string> profiles;
  // Rule index → policy rule id (as Engine::decide reports it).
  std::vector<std::string> rule_ids;
  std::vector<LsmOutcome> outcomes;
  std::array<uint8_t, 256> byte_class{};
  uint32_t num_classes = 0;
  // Per state: outcome index | kLsmStateFinal when no continuation changes it.
  std::vector<uint32_t> states;
  // [state * num_classes + class] → next state (global numbering).
  std::vector<uint32_t> transitions;
  // [profile * kLsmNumOps + op] → start state.
  std::vector<uint32_t> starts;
  bool audit_mode = false;
  // Per profile: mode and address entries in Engine::decide's order
  // (profile, base, loopback), i.e. rule order is priority order.
  std::vector<NetworkPlan> network;
};

// Builds the tables. Deterministic: the same policy always gives the same plan.
LsmPlan compileLsm(const Policy& policy, const CompiledPolicy& compiled);

// The outcome the tables give `path` (absolute, normal; "/" walks no byte).
// Also reports how many bytes were walked before a final state (for tests).
LsmOutcome lsmDecide(const LsmPlan& plan, uint32_t profile, LsmOp op, std::string_view path,
                     size_t* walked = nullptr);

// The index of `name` in `names`, appended when absent: how rule and profile
// names get their indices in a plan and across policy versions.
uint32_t lsmNameIndex(std::vector<std::string>& names, std::string_view name);

// `plan` renumbered for a policy swap: the names in `profiles` and `rule_ids`
// (those earlier versions used; tasks and queued events hold their indices)
// keep their indices, the plan's new names follow, and a profile the plan no
// longer has gets the base's tables (an unknown profile is the base for
// Engine::decide too). lsmDecide() of the result by a profile's new index
// equals lsmDecide() of `plan` by its old one.
LsmPlan renumberLsmPlan(const LsmPlan& plan, std::vector<std::string> profiles,
                        std::vector<std::string> rule_ids);

// Profile index by name; 0 (base) when unknown, as Engine::decide does.
uint32_t lsmProfileIndex(const LsmPlan& plan, std::string_view name);

// A short summary ("3 profiles, 412 states, 37 classes") for logs and tests.
std::string lsmSummary(const LsmPlan& plan);

}  // namespace sv::policy
