// The seccomp filters, built once at build time instead of at every start.
//
// A filter is a function of the five booleans of a policy::SeccompPlan, so
// all 32 are built with libseccomp by seccomp_programs_gen (the same
// buildSeccompFilter() that tests run) when supervise is built, and compiled
// in: a session then spends no time in libseccomp (~1.1 ms of a cold start
// on the test VM). The integration test SeccompPrograms.MatchTheBuilder
// checks every table entry against buildSeccompFilter().
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <vector>

#include "policy/compile.h"

namespace sv::tracer {

inline constexpr size_t kSeccompPlanCount = 32;

// The table index of a plan, and back (a bit per boolean).
size_t seccompPlanIndex(const policy::SeccompPlan& plan);
policy::SeccompPlan seccompPlanAt(size_t index);

// The program buildSeccompFilter(plan) returns, from the table.
std::vector<sock_filter> prebuiltSeccompFilter(const policy::SeccompPlan& plan);
// The program buildRefusalLogFilter(plan) returns, from the table.
std::vector<sock_filter> prebuiltRefusalLogFilter(const policy::SeccompPlan& plan);

}  // namespace sv::tracer
