// load(): policy text in, a validated, resolved Policy (or diagnostics) out.
//
// Layers, lowest first: a preset, the policy files, `-o key=value` overrides,
// then the SUPERVISE_* environment. Scalars replace, lists concatenate
// (`-o key=value` on a list replaces it, `-o key+=value` appends). Every
// problem is reported at once, each with file:line:col. Pure: the caller
// reads files, the environment, the cwd and $HOME and passes them in.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policy/home_rules.h"
#include "policy/model.h"

namespace sv::policy {

struct Diagnostic {
  std::string file;
  int line = 0, column = 0;  // 1-based; 0 when not from a file (overrides, env)
  std::string message;
  bool warning = false;
  // "file:line:col: error: message" ("file: warning: message" without a line).
  std::string format() const;
};

struct PolicySource {
  std::string name;  // shown in diagnostics
  std::string text;
};

// A path the session writes or relies on that the tree must not touch (see
// SelfProtection in model.h). `path` is absolute; it is matched literally
// (glob characters in it are escaped) and covers everything below it.
struct SelfProtectPath {
  std::string what;    // the id is "self-protect:<what>": "audit-file", "policy-file", ...
  std::string path;    // absolute
  std::string reason;  // "" = the default reason for `what`
  bool read = false;   // deny reads too, not only writes
};

struct LoadRequest {
  std::string preset = "code-sandbox";  // or "none" for an empty base
  std::vector<PolicySource> files;
  std::vector<std::string> overrides;  // "key=value", "key+=value"
  std::map<std::string, std::string> env;  // SUPERVISE_MODE, SUPERVISE_NETWORK, SUPERVISE_PRESET
  std::string workspace;  // absolute; relative rules are resolved against it
  std::string home;       // for `~`
  // Derived from the launching environment (deriveHomeRules); added when the
  // layered policy says filesystem.toolchains / caches / secrets.
  HomeRules home_rules;
  // Added after every layer (selfProtection()); the policy's own file sinks
  // and spool files are added by the loader itself.
  std::vector<SelfProtectPath> self_protect;
};

struct LoadResult {
  std::shared_ptr<const Policy> policy;  // null when there are errors
  std::vector<Diagnostic> diagnostics;   // errors and warnings, in report order
  bool ok() const;
  size_t errorCount() const;
};

// Parses, merges, validates and resolves. Never throws.
LoadResult load(const LoadRequest& request);

// The self-protection of a policy (pure): `extra` plus what the policy itself
// names — every file sink's path and, when it rotates, its rotated siblings
// PATH.1 .. PATH.<maxFiles-1>, and the spool files of every syslog sink
// (<spoolDir>/supervise-spool-*). Duplicate paths are kept once (the first
// entry wins). load() calls it with request.self_protect.
SelfProtection selfProtection(const Policy& policy, const std::vector<SelfProtectPath>& extra);

// The default reason of a self-protect kind ("the audit trail is out of the
// tree's reach").
std::string selfProtectReason(std::string_view what);

}  // namespace sv::policy
