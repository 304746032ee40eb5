// policySummary(): the effective policy in a few lines an agent can be given
// (`supervise explain --summary`, and the MCP server's instructions): where a
// command may write and read, what is refused whatever the roots say, what
// may run, the network, and which commands switch into which profile.
//
// A summary, not the policy: long lists are cut ("and 7 more") and the
// built-in system paths are named as such. `supervise explain OP TARGET`
// remains the answer for one operation. Pure: reads only the Policy.
#pragma once

#include <string>

#include "policy/model.h"

namespace sv::supervisor {

std::string policySummary(const policy::Policy& policy);

}  // namespace sv::supervisor
