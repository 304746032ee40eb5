// A SeccompPlan as an index into the prebuilt table (seccomp_programs.h).
#include "tracer/seccomp/seccomp_programs.h"

namespace sv::tracer {
namespace {

// The plan's booleans, in bit order.
constexpr bool policy::SeccompPlan::*kPlanBits[] = {
    &policy::SeccompPlan::notify_write_opens, &policy::SeccompPlan::notify_read_opens,
    &policy::SeccompPlan::notify_exec, &policy::SeccompPlan::notify_links_renames_and_attrs,
    &policy::SeccompPlan::allow_user_namespaces, &policy::SeccompPlan::notify_socket_families};
static_assert(size_t{1} << std::size(kPlanBits) == kSeccompPlanCount);

}  // namespace

size_t seccompPlanIndex(const policy::SeccompPlan& plan) {
  size_t index = 0;
  for (size_t bit = 0; bit < std::size(kPlanBits); ++bit)
    if (plan.*kPlanBits[bit]) index |= size_t{1} << bit;
  return index;
}

policy::SeccompPlan seccompPlanAt(size_t index) {
  policy::SeccompPlan plan;
  for (size_t bit = 0; bit < std::size(kPlanBits); ++bit)
    plan.*kPlanBits[bit] = (index >> bit) & 1;
  return plan;
}

}  // namespace sv::tracer
