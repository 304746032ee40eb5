// validatePolicy(): the checks that turn a parsed, layered Policy into a
// valid one. Layering (load.cpp) resolves each rule where it is read; what
// needs the whole policy runs here, once: defaults (network mode, the system
// read paths, the workspace), profile references of exec.switch, duplicate
// entries and ids, contradictions between layers, and rules that can never
// fire. Every finding is a Diagnostic at the rule's file:line:col.
#pragma once

#include <memory>
#include <vector>

#include "policy/load.h"
#include "policy/model.h"

namespace sv::policy {

// The valid policy (never null); errors and warnings are appended to *diags,
// and a policy with errors is not to be used (LoadResult::ok()).
std::shared_ptr<Policy> validatePolicy(Policy policy, const LoadRequest& request,
                                       std::vector<Diagnostic>* diags);

}  // namespace sv::policy
