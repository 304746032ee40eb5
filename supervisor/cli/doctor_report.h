// What `supervise doctor` and `supervise status` print: the host report,
// the policy in effect and the feature matrix, as text or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/model.h"
#include "supervisor/cli/policy_discovery.h"
#include "supervisor/host/feature_matrix.h"
#include "supervisor/host/host_report.h"

namespace sv::supervisor {

nlohmann::json doctorJson(const HostReport &host, const PolicySummary &summary,
                          const policy::Policy &policy, const std::vector<FeatureRow> &rows);
std::string doctorText(const HostReport &host, const PolicySummary &summary,
                       const policy::Policy &policy, const std::vector<FeatureRow> &rows);
std::string statusText(const PolicySummary &summary, const policy::Policy &policy,
                       const std::vector<FeatureRow> &rows);

}  // namespace sv::supervisor
