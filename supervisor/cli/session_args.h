// The flags of a supervised session shared by `supervise --` and
// `supervise serve` (every command the daemon runs is such a session):
// the audit sinks and formats, --quiet, --backend.
#pragma once

#include "supervisor/cli/policy_args.h"
#include "supervisor/session/session.h"

namespace CLI {
class App;
}

namespace sv::supervisor {

// Adds the flags to `app`; the audit shorthands (--audit-format,
// --audit-syslog, --audit-kafka, --audit-otlp) become -o overrides in
// `policy`, the rest land in `session`. Both must outlive the parse.
void addSessionFlags(CLI::App& app, PolicyArgs& policy, SessionOptions& session);

// Every relative rule hangs off the workspace: one that is not a directory
// is a mistake to report (on stderr), not a policy to half-apply.
bool workspaceIsADirectory(const policy::Policy& policy);

}  // namespace sv::supervisor
