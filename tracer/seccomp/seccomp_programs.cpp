// The prebuilt seccomp filters (seccomp_programs.h); the table is generated.
#include "tracer/seccomp/seccomp_programs.h"

#include <iterator>
#include <span>

namespace sv::tracer {
namespace {
#include "seccomp_programs.inc"  // kPrograms[kSeccompPlanCount], kRefusalPrograms[2]
}  // namespace

std::vector<sock_filter> prebuiltSeccompFilter(const policy::SeccompPlan& plan) {
  const std::span<const sock_filter> program = kPrograms[seccompPlanIndex(plan)];
  return {program.begin(), program.end()};
}

std::vector<sock_filter> prebuiltRefusalLogFilter(const policy::SeccompPlan& plan) {
  const std::span<const sock_filter> program = kRefusalPrograms[plan.allow_user_namespaces];
  return {program.begin(), program.end()};
}

}  // namespace sv::tracer
