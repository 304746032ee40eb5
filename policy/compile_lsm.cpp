// compileLsm(): glob rule lists → byte DFAs for the BPF-LSM programs (see
// compile_lsm.h). Three steps: a Thompson-style NFA per (profile, operation)
// with each rule's accepting state tagged by its priority; byte classes over
// every NFA edge set; subset construction per NFA into one global state
// numbering.
#include "policy/compile_lsm.h"

#include <algorithm>
#include <bitset>
#include <map>
#include <sstream>
#include <unordered_map>

#include "policy/engine.h"

namespace sv::policy {
namespace {

using ByteSet = std::bitset<256>;

ByteSet anyButSlash() {
  ByteSet s;
  s.set();
  s.reset('/');
  return s;
}

ByteSet single(unsigned char c) {
  ByteSet s;
  s.set(c);
  return s;
}

// The bytes a bracket expression at pat[i] == '[' accepts, as
// Glob::matchComponent decides them; npos when it is malformed (then `[` is
// a literal there, as in the matcher).
size_t classSet(std::string_view pat, size_t i, ByteSet* out) {
  size_t j = i + 1;
  bool negate = false;
  if (j < pat.size() && (pat[j] == '!' || pat[j] == '^')) {
    negate = true;
    ++j;
  }
  ByteSet set;
  bool any = false, first = true;
  while (j < pat.size()) {
    unsigned char lo = static_cast<unsigned char>(pat[j]);
    if (lo == ']' && !first) {
      if (!any) return std::string_view::npos;
      if (negate) set.flip();
      set.reset('/');  // a component never holds '/'
      *out = set;
      return j + 1;
    }
    first = false;
    if (lo == '\\' && j + 1 < pat.size()) lo = static_cast<unsigned char>(pat[++j]);
    if (lo == '/') return std::string_view::npos;
    unsigned char hi = lo;
    if (j + 2 < pat.size() && pat[j + 1] == '-' && pat[j + 2] != ']') {
      hi = static_cast<unsigned char>(pat[j + 2]);
      j += 2;
      if (hi == '\\' && j + 1 < pat.size()) hi = static_cast<unsigned char>(pat[++j]);
    }
    any = true;
    for (unsigned c = lo; c <= hi; ++c) set.set(c);
    ++j;
  }
  return std::string_view::npos;
}

// One glob's components, split as Glob::compile splits them (a prefix glob
// is the pattern followed by `**`).
std::vector<std::string_view> components(const Glob& g) {
  std::vector<std::string_view> out;
  std::string_view rest = std::string_view(g.pattern()).substr(1);
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view comp = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (!comp.empty()) out.push_back(comp);
  }
  if (g.isPrefix() && (out.empty() || out.back() != "**")) out.push_back("**");
  return out;
}

class Nfa {
 public:
  struct State {
    std::vector<std::pair<ByteSet, int>> edges;
    std::vector<int> eps;
    int accept = -1;  // priority of the rule this state accepts for; lower wins
  };

  Nfa() { states_.emplace_back(); }  // 0: start

  // Adds one rule: the path language "/c1/c2..." of the glob, accepting with `priority`.
  void addRule(const Glob& g, int priority) {
    int cur = add();
    states_[0].eps.push_back(cur);
    for (std::string_view comp : components(g)) {
      if (comp == "**") {  // (/[^/]+)*: zero or more whole components
        int loop = add(), a = add(), b = add();
        states_[cur].eps.push_back(loop);
        states_[loop].edges.push_back({single('/'), a});
        states_[a].edges.push_back({anyButSlash(), b});
        states_[b].edges.push_back({anyButSlash(), b});
        states_[b].eps.push_back(loop);
        cur = loop;
        continue;
      }
      cur = step(cur, single('/'));
      for (size_t p = 0; p < comp.size();) {
        char c = comp[p];
        if (c == '*') {
          int s = add();
          states_[cur].eps.push_back(s);
          states_[s].edges.push_back({anyButSlash(), s});
          cur = s;
          ++p;
        } else if (c == '?') {
          cur = step(cur, anyButSlash());
          ++p;
        } else if (ByteSet set; c == '[' && classSet(comp, p, &set) != std::string_view::npos) {
          size_t end = classSet(comp, p, &set);
          cur = step(cur, set);
          p = end;
        } else if (c == '\\' && p + 1 < comp.size()) {
          cur = step(cur, single(static_cast<unsigned char>(comp[p + 1])));
          p += 2;
        } else {
          cur = step(cur, single(static_cast<unsigned char>(c)));
          ++p;
        }
      }
    }
    int& acc = states_[cur].accept;
    if (acc < 0 || priority < acc) acc = priority;
  }

  const std::vector<State>& states() const { return states_; }

  // Sorted epsilon closure of `set`.
  std::vector<int> closure(std::vector<int> set) const {
    std::vector<char> seen(states_.size(), 0);
    std::vector<int> stack = set;
    for (int s : set) seen[s] = 1;
    while (!stack.empty()) {
      int s = stack.back();
      stack.pop_back();
      for (int t : states_[s].eps) {
        if (!seen[t]) {
          seen[t] = 1;
          set.push_back(t);
          stack.push_back(t);
        }
      }
    }
    std::sort(set.begin(), set.end());
    return set;
  }

 private:
  int add() {
    states_.emplace_back();
    return static_cast<int>(states_.size()) - 1;
  }
  int step(int from, const ByteSet& on) {
    int to = add();
    states_[from].edges.push_back({on, to});
    return to;
  }
  std::vector<State> states_;
};

// One ordered rule list: what Engine::decide walks for a (profile, op).
struct RuleList {
  std::vector<std::pair<const Glob*, LsmOutcome>> rules;
  LsmOutcome fallback;
};

class Builder {
 public:
  explicit Builder(const Policy& p) : p_(p) {
    for (const char* root : {"/dev", "/proc", "/sys"}) {  // see isNoExecSystemPath()
      Glob g;
      Glob::compile(root, &g, nullptr, nullptr, true);
      noexec_.push_back(std::move(g));
    }
  }

  uint32_t ruleIndex(std::string_view id) {
    auto [it, fresh] =
        rule_index_.emplace(std::string(id), static_cast<uint32_t>(rule_ids_.size()));
    if (fresh) rule_ids_.emplace_back(id);
    return it->second;
  }

  RuleList list(const Profile* prof, LsmOp op, const std::vector<std::string>& profiles) {
    RuleList l;
    auto addAll = [&](const std::vector<PathRule>& rules, uint8_t verdict) {
      for (const auto& r : rules) l.rules.push_back({&r.glob, {verdict, ruleIndex(r.id)}});
    };
    auto readRules = [&](bool for_exec) {
      // A read denial becomes the default exec denial when exec falls back to read.
      auto deny = [&](const std::vector<PathRule>& rules) {
        if (!for_exec) return addAll(rules, kLsmDeny);
        for (const auto& r : rules)
          l.rules.push_back({&r.glob, {kLsmDeny, ruleIndex(kDefaultDenyExec)}});
      };
      deny(p_.self_protect.deny_read);  // before every profile (model.h SelfProtection)
      if (prof) {
        deny(prof->filesystem.deny_read);
        addAll(prof->filesystem.readable_roots, kLsmAllow);
        addAll(prof->filesystem.writable_roots, kLsmAllow);
      }
      deny(p_.filesystem.deny_read);
      addAll(p_.filesystem.readable_roots, kLsmAllow);
      addAll(p_.filesystem.writable_roots, kLsmAllow);
      if (for_exec) {
        // Readable only through a system path under /dev, /proc or /sys: not executable.
        for (const auto& g : noexec_)
          l.rules.push_back({&g, {kLsmDeny, ruleIndex(kDefaultDenyExec)}});
      }
      addAll(p_.system_read, kLsmAllow);
    };
    switch (op) {
      case LsmOp::Read:
        readRules(false);
        l.fallback = {kLsmDeny, ruleIndex(kDefaultDenyRead)};
        break;
      case LsmOp::Write:
        addAll(p_.self_protect.deny_write, kLsmDeny);  // before every profile
        if (prof) {
          addAll(prof->filesystem.deny_write, kLsmDeny);
          addAll(prof->filesystem.writable_roots, kLsmAllow);
        }
        addAll(p_.filesystem.deny_write, kLsmDeny);
        addAll(p_.filesystem.writable_roots, kLsmAllow);
        addAll(p_.system_write, kLsmAllow);
        l.fallback = {kLsmDeny, ruleIndex(kDefaultDenyWrite)};
        break;
      case LsmOp::Exec:
        if (prof) {
          addAll(prof->exec.deny, kLsmDeny);
          addAll(prof->exec.allow, kLsmAllow);
        }
        addAll(p_.exec.deny, kLsmDeny);
        if (!p_.exec.allow.empty()) {
          addAll(p_.exec.allow, kLsmAllow);
        } else {
          readRules(true);
        }
        l.fallback = {kLsmDeny, ruleIndex(kDefaultDenyExec)};
        break;
      case LsmOp::Switch: {
        auto addSwitches = [&](const std::vector<SwitchRule>& rules) {
          for (const auto& s : rules) {
            auto it = std::find(profiles.begin(), profiles.end(), s.profile);
            uint32_t target =
                it == profiles.end() ? 0 : static_cast<uint32_t>(it - profiles.begin());
            l.rules.push_back({&s.glob, {kLsmSwitch, target}});
          }
        };
        if (prof) addSwitches(prof->exec.switches);
        addSwitches(p_.exec.switches);
        l.fallback = {kLsmStay, 0};
        break;
      }
      case LsmOp::Connect:  // no DFA: the network tables decide connects
        break;
    }
    return l;
  }

  std::vector<std::string> takeRuleIds() { return std::move(rule_ids_); }

 private:
  const Policy& p_;
  std::vector<Glob> noexec_;
  std::map<std::string, uint32_t, std::less<>> rule_index_;
  std::vector<std::string> rule_ids_;
};

// Bytes that every edge set treats alike share a class.
uint32_t byteClasses(const std::vector<Nfa>& nfas, std::array<uint8_t, 256>* out) {
  std::vector<ByteSet> sets;
  for (const auto& n : nfas)
    for (const auto& s : n.states())
      for (const auto& [set, _] : s.edges)
        if (std::find(sets.begin(), sets.end(), set) == sets.end()) sets.push_back(set);
  std::map<std::vector<bool>, uint8_t> ids;
  for (int b = 0; b < 256; ++b) {
    std::vector<bool> sig(sets.size());
    for (size_t i = 0; i < sets.size(); ++i) sig[i] = sets[i].test(b);
    auto [it, _] = ids.emplace(std::move(sig), static_cast<uint8_t>(ids.size()));
    (*out)[b] = it->second;
  }
  return static_cast<uint32_t>(ids.size());
}

struct SetHash {
  size_t operator()(const std::vector<int>& v) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the state numbers
    for (int x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Subset construction of one NFA into plan's global tables; returns the start state.
uint32_t determinize(const Nfa& nfa, const RuleList& list, LsmPlan& plan,
                     std::map<std::pair<uint8_t, uint32_t>, uint32_t>& outcome_index) {
  std::array<int, 256> rep;  // a representative byte per class
  rep.fill(-1);
  for (int b = 255; b >= 0; --b) rep[plan.byte_class[b]] = b;

  auto outcomeOf = [&](const std::vector<int>& set) {
    int best = -1;
    for (int s : set) {
      int a = nfa.states()[s].accept;
      if (a >= 0 && (best < 0 || a < best)) best = a;
    }
    LsmOutcome o = best < 0 ? list.fallback : list.rules[best].second;
    auto [it, fresh] = outcome_index.emplace(std::make_pair(o.verdict, o.value),
                                             static_cast<uint32_t>(plan.outcomes.size()));
    if (fresh) plan.outcomes.push_back(o);
    return it->second;
  };

  const uint32_t base = static_cast<uint32_t>(plan.states.size());
  const uint32_t ncls = plan.num_classes;
  const auto& ns = nfa.states();
  // Per NFA state and class: the epsilon-closed targets, computed once.
  std::vector<std::vector<std::vector<int>>> step(ns.size(), std::vector<std::vector<int>>(ncls));
  for (size_t s = 0; s < ns.size(); ++s) {
    for (uint32_t c = 0; c < ncls; ++c) {
      std::vector<int> to;
      for (const auto& [on, t] : ns[s].edges)
        if (on.test(rep[c])) to.push_back(t);
      if (!to.empty()) step[s][c] = nfa.closure(std::move(to));
    }
  }
  std::unordered_map<std::vector<int>, uint32_t, SetHash> ids;
  std::vector<std::vector<int>> pending;
  auto idOf = [&](std::vector<int> set) {
    auto [it, fresh] = ids.emplace(set, base + static_cast<uint32_t>(ids.size()));
    if (fresh) {
      plan.states.push_back(outcomeOf(set));
      plan.transitions.resize(plan.transitions.size() + ncls, 0);
      pending.push_back(std::move(set));
    }
    return it->second;
  };
  const uint32_t start = idOf(nfa.closure({0}));
  std::vector<uint32_t> mark(ns.size(), 0);
  uint32_t stamp = 0;
  std::vector<int> next;
  for (size_t i = 0; i < pending.size(); ++i) {
    const std::vector<int> set = pending[i];  // copy: idOf() may grow `pending`
    for (uint32_t c = 0; c < ncls; ++c) {
      ++stamp;
      next.clear();
      for (int s : set)
        for (int t : step[s][c])
          if (mark[t] != stamp) {
            mark[t] = stamp;
            next.push_back(t);
          }
      std::sort(next.begin(), next.end());
      plan.transitions[(base + i) * ncls + c] = idOf(next);
    }
  }

  // A state entered only by '/' is never where a normal path ends (no
  // trailing '/', and "/" walks no byte) and never meets a second '/': its
  // own outcome and its '/' edge are "don't care", so it takes the outcome of
  // its other continuations instead.
  const uint32_t end = static_cast<uint32_t>(plan.states.size());
  const uint32_t slash = plan.byte_class['/'];
  std::vector<char> by_slash(end - base, 0), by_other(end - base, 0);
  by_other[start - base] = 1;
  for (uint32_t s = base; s < end; ++s)
    for (uint32_t c = 0; c < ncls; ++c)
      (c == slash ? by_slash : by_other)[plan.transitions[s * ncls + c] - base] = 1;

  // Final states: no continuation can change the outcome any more. Greatest
  // fixpoint: a state stays final while every successor is final with the
  // same outcome; kNone marks a slash-only state whose outcome is still open.
  constexpr uint32_t kNone = ~0u;
  std::vector<char> fin(end - base, 1);
  std::vector<uint32_t> val(end - base);
  for (uint32_t s = base; s < end; ++s)
    val[s - base] = by_slash[s - base] && !by_other[s - base] ? kNone : plan.states[s];
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t s = base; s < end; ++s) {
      if (!fin[s - base]) continue;
      const bool slash_only = by_slash[s - base] && !by_other[s - base];
      for (uint32_t c = 0; c < ncls; ++c) {
        if (slash_only && c == slash) continue;  // "//" is never in a normal path
        uint32_t t = plan.transitions[s * ncls + c] - base;
        uint32_t& v = val[s - base];
        if (fin[t] && val[t] != kNone && v == kNone) {
          v = val[t];
          changed = true;
        }
        if (!fin[t] || (val[t] != kNone && val[t] != v)) {
          fin[s - base] = 0;
          changed = true;
          break;
        }
      }
    }
  }
  for (uint32_t s = base; s < end; ++s) {
    if (!fin[s - base] || val[s - base] == kNone) continue;
    plan.states[s] = val[s - base] | kLsmStateFinal;
  }
  return start;
}

// The allowlist of one profile in Engine::decide's order (profile entries,
// base entries, then loopback in localhost mode), unsorted, so that rule
// order is priority order: the loader keeps the first matching range of the
// highest-priority rule. Host-name entries are left out (the kernel sees
// addresses only; they are allowed once resolved, at run time).
NetworkPlan netPlanFor(const Policy& p, const Profile* prof) {
  NetworkPlan plan;
  plan.mode = p.network.mode.value_or(NetworkMode::Localhost);
  if (prof && prof->network.mode) plan.mode = *prof->network.mode;
  if (plan.mode == NetworkMode::None || plan.mode == NetworkMode::All) return plan;
  auto add = [&](const std::vector<NetRule>& rules) {
    for (const auto& r : rules)
      if (r.cidr) plan.entries.push_back({*r.cidr, r.port_lo, r.port_hi, r.id});
  };
  if (prof) add(prof->network.allow);
  add(p.network.allow);
  if (plan.mode == NetworkMode::Localhost) {
    std::string err;
    for (const char* lo : {"127.0.0.0/8", "::1/128"})
      plan.entries.push_back({*Cidr::parse(lo, &err), 0, 65535, std::string(kAllowLoopback)});
  }
  return plan;
}

}  // namespace

LsmPlan compileLsm(const Policy& policy, const CompiledPolicy& /*compiled*/) {
  LsmPlan plan;
  plan.audit_mode = policy.mode == Mode::Audit;
  plan.profiles.push_back("");
  for (const auto& [name, _] : policy.profiles) plan.profiles.push_back(name);

  Builder b(policy);
  b.ruleIndex(kDefaultDenyRead);  // fixed low indices for the default rules
  b.ruleIndex(kDefaultDenyWrite);
  b.ruleIndex(kDefaultDenyExec);
  std::vector<RuleList> lists;
  std::vector<Nfa> nfas;
  for (const auto& name : plan.profiles) {
    const Profile* prof = name.empty() ? nullptr : &policy.profiles.at(name);
    for (int op = 0; op < kLsmNumOps; ++op) {
      lists.push_back(b.list(prof, static_cast<LsmOp>(op), plan.profiles));
      Nfa nfa;
      for (size_t i = 0; i < lists.back().rules.size(); ++i)
        nfa.addRule(*lists.back().rules[i].first, static_cast<int>(i));
      nfas.push_back(std::move(nfa));
    }
    plan.network.push_back(netPlanFor(policy, prof));
  }
  plan.rule_ids = b.takeRuleIds();
  plan.num_classes = byteClasses(nfas, &plan.byte_class);
  std::map<std::pair<uint8_t, uint32_t>, uint32_t> outcome_index;
  for (size_t i = 0; i < nfas.size(); ++i)
    plan.starts.push_back(determinize(nfas[i], lists[i], plan, outcome_index));
  return plan;
}

LsmOutcome lsmDecide(const LsmPlan& plan, uint32_t profile, LsmOp op, std::string_view path,
                     size_t* walked) {
  if (profile >= plan.profiles.size()) profile = 0;
  uint32_t s = plan.starts[profile * kLsmNumOps + static_cast<uint32_t>(op)];
  if (path == "/") path = {};  // the root is the empty sequence of components
  size_t i = 0;
  for (; i < path.size() && !(plan.states[s] & kLsmStateFinal); ++i) {
    s = plan.transitions[s * plan.num_classes + plan.byte_class[static_cast<uint8_t>(path[i])]];
  }
  if (walked) *walked = i;
  return plan.outcomes[plan.states[s] & kLsmStateOutcomeMask];
}

uint32_t lsmProfileIndex(const LsmPlan& plan, std::string_view name) {
  for (size_t i = 0; i < plan.profiles.size(); ++i)
    if (plan.profiles[i] == name) return static_cast<uint32_t>(i);
  return 0;
}

std::string lsmSummary(const LsmPlan& plan) {
  std::ostringstream os;
  os << plan.profiles.size() << " profiles, " << plan.states.size() << " states, "
     << plan.num_classes << " byte classes, " << plan.rule_ids.size() << " rules, "
     << plan.outcomes.size() << " outcomes";
  return os.str();
}

}  // namespace sv::policy
