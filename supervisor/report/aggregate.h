// Report: everything `supervise report` shows, built one Record at a time in
// bounded memory. Each collection has a cap; what goes past it is counted
// (an overflow count is shown), never kept. No event is stored whole.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "supervisor/report/record.h"

namespace sv::report {

struct Limits {
  size_t sessions = 1000;
  size_t processes = 5000;     // across all sessions
  size_t rules = 500;          // distinct denying rules
  size_t examples_per_rule = 5;
  size_t denials_per_rule = 20;  // event ids kept per rule (the HTML lists them)
  size_t timeline_buckets = 2048;
  size_t malformed_examples = 5;
  size_t text = 512;           // bytes kept of any one string (command, path)
};

// Outcome columns of every count.
enum Outcome { kAllow = 0, kDeny = 1, kWouldDeny = 2, kOutcomes = 3 };
using Counts = std::array<uint64_t, kOutcomes>;

struct SessionSummary {
  std::string id, format, command, start, end;  // start/end: the records' times
  int64_t first_ms = -1, last_ms = -1;
  bool started = false, ended = false;
  int64_t exit_code = -1;
  std::string exit_signal;
  Counts decisions{};
  std::string exitText() const;  // "0", "SIGKILL", "running or lost" ...
};

struct DenialRef {
  std::string source;  // the audit file it came from
  std::string event_id, session_id, target, comm;
  uint64_t seq = 0;
  bool would = false;  // would-deny (audit mode)
};

struct RuleSummary {
  std::string id, reason;
  uint64_t deny = 0, would_deny = 0;
  std::vector<std::string> examples;  // distinct targets, at most examples_per_rule
  uint64_t more_targets = 0;          // targets seen past the cap (not deduplicated)
  std::vector<DenialRef> denials;     // at most denials_per_rule
};

struct ProcessSummary {
  std::string session_id;
  int64_t pid = -1, ppid = -1;
  std::string comm, command;
  uint64_t decisions = 0, denials = 0;
  std::map<std::string, uint64_t, std::less<>> denied_rules;  // at most 8, the rest in other_denials
  uint64_t other_denials = 0;
};

// How many distinct keys went past a cap: exact up to kMaxKept keys, then
// each further occurrence counts (so the number is an upper bound, flagged).
// Keys are kept as 64-bit hashes (a trail's key can be megabytes long), so
// two keys are one only when their hashes collide: for 100,000 keys, odds of
// about 1 in 10^9.
class DistinctCount {
 public:
  void add(std::string_view key);
  uint64_t count() const { return seen_.size() + past_; }
  bool exact() const { return past_ == 0; }

 private:
  static constexpr size_t kMaxKept = 100000;
  std::unordered_set<uint64_t> seen_;
  uint64_t past_ = 0;
};

struct TimelineBucket {
  Counts counts{};
};

class Report {
 public:
  explicit Report(Limits limits = {}) : limits_(limits) {}

  void add(const Record& r);
  // The file the next records come from (denials remember it for `explain`).
  void setSource(const std::string& file) { source_ = file; }
  // A line that did not decode: counted, its line number kept for the first few.
  void addMalformed(const std::string& where, const std::string& why);

  const Limits& limits() const { return limits_; }
  uint64_t lines() const { return lines_; }
  uint64_t malformed() const { return malformed_; }
  const std::vector<std::string>& malformedExamples() const { return malformed_examples_; }
  uint64_t otherRecords() const { return other_; }
  const Counts& totals() const { return totals_; }
  const std::map<std::string, Counts>& byCategory() const { return by_category_; }
  const std::vector<SessionSummary>& sessions() const { return sessions_; }
  const DistinctCount& sessionsOverflow() const { return sessions_overflow_; }
  // Sorted by denials (deny + would-deny), most first.
  std::vector<const RuleSummary*> rulesByDenials() const;
  const DistinctCount& rulesOverflow() const { return rules_overflow_; }
  const std::vector<ProcessSummary>& processes() const { return processes_; }
  const DistinctCount& processesOverflow() const { return processes_overflow_; }
  // Decisions of processes not tracked (past the cap).
  uint64_t untrackedDecisions() const { return untracked_decisions_; }
  // Timeline: buckets of bucketMs() width starting at timelineStartMs().
  int64_t timelineStartMs() const { return t0_; }
  int64_t bucketMs() const { return bucket_ms_; }
  const std::vector<TimelineBucket>& timeline() const { return timeline_; }

 private:
  SessionSummary* session(const std::string& id, const Record& r);
  ProcessSummary* process(const Record& r);
  void addToTimeline(int64_t ms, Outcome o);
  // At most limits_.text bytes of s (whole UTF-8 characters, "…" when cut);
  // assignCut() reuses dst's memory, as add() does for every record.
  std::string cut(std::string_view s) const;
  void assignCut(std::string* dst, std::string_view s) const;

  // Orders (session, pid) keys and finds them by a (string_view, pid) without
  // copying the session id.
  struct ProcessKeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      const std::string_view x = a.first, y = b.first;
      return x < y || (x == y && a.second < b.second);
    }
  };

  Limits limits_;
  std::string source_;
  uint64_t lines_ = 0, malformed_ = 0, other_ = 0;
  std::vector<std::string> malformed_examples_;
  Counts totals_{};
  std::map<std::string, Counts> by_category_;
  std::vector<SessionSummary> sessions_;
  std::map<std::string, size_t, std::less<>> session_index_;
  DistinctCount sessions_overflow_;
  std::map<std::string, RuleSummary, std::less<>> rules_;
  DistinctCount rules_overflow_;
  std::vector<ProcessSummary> processes_;
  std::map<std::pair<std::string, int64_t>, size_t, ProcessKeyLess> process_index_;
  DistinctCount processes_overflow_;
  uint64_t untracked_decisions_ = 0;
  int64_t t0_ = -1, bucket_ms_ = 1;
  std::vector<TimelineBucket> timeline_;
  std::string scratch_, session_key_, rule_key_;  // add()'s, kept for their capacity
};

}  // namespace sv::report
