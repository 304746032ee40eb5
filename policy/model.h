// The policy model: what a parsed, validated, fully resolved policy says.
//
// Everything here is plain data. Paths are absolute and lexically normal
// (the workspace and `~` already substituted), so the engine and the kernel
// images never see a relative path. Every rule has a stable id and an
// optional reason that a denial shows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/cidr.h"
#include "policy/glob.h"

namespace sv::policy {

enum class Mode { Enforce, Audit };
enum class Fallback { FailClosed, UnsafeHostProcess };
enum class NetworkMode { None, Localhost, Allowlist, All };
enum class EnvMode { Denylist, Allowlist };

// Where a rule came from, for `explain` and error messages.
struct Origin {
  std::string file;  // policy file path, "preset:<name>", "-o", "env:<VAR>", or kDerivedOrigin
  int line = 0;      // 1-based; 0 when not from a file
  int column = 0;
  // Derived at launch from the environment (filesystem.toolchains / caches /
  // secrets, home_rules.h), not written in any policy text.
  bool derived() const;
};
inline constexpr std::string_view kDerivedOrigin = "environment";
inline bool Origin::derived() const { return file == kDerivedOrigin; }

// A filesystem or exec rule: a root (directory prefix) or a glob.
struct PathRule {
  std::string id;
  std::string reason;
  std::string pattern;  // as written by the user, for display
  // What audit events show as rule.name: the section and the pattern as
  // written, "filesystem.denyWrite .env" ("profiles.git." in front inside a
  // profile), so a SIEM reads which rule fired without the policy at hand.
  std::string name;
  Glob glob;            // compiled, anchored at an absolute path
  Origin origin;
  // A derived secret (filesystem.secrets) that did not exist at load: a
  // denyRead rule on it needs no read-open notification (compile.cpp).
  bool absent_at_load = false;
};

// One entry of network.allow: an address block or a host name, and a port range.
struct NetRule {
  std::string id;
  std::string reason;
  std::string spec;              // as written: "10.0.0.0/8:443", "github.com:22"
  std::string name;              // rule.name: "network.allow github.com:22" (see PathRule)
  std::optional<Cidr> cidr;      // set for address entries
  std::string host;              // set for domain entries (resolved at session start)
  uint16_t port_lo = 0, port_hi = 65535;
  Origin origin;
};

// exec.switch entry: an exec of a matching binary moves the process into a profile.
struct SwitchRule {
  std::string id;
  std::string reason;
  std::string pattern;
  std::string name;  // rule.name: "exec.switch /usr/bin/git" (see PathRule)
  Glob glob;
  std::string profile;
  Origin origin;
};

// environment.allow / environment.deny entry: a glob over a variable's whole
// name (`*`, `?`, `[...]`; case-sensitive), docs/policy.md "Environment".
struct EnvRule {
  std::string id;
  std::string reason;
  std::string pattern;  // as written
  std::string name;     // "environment.deny *_TOKEN"
  Origin origin;
};

// environment.set entry: a variable the command always gets, with this value.
struct EnvSet {
  std::string id;  // "environment.set:NAME"
  std::string name;
  std::string value;
  Origin origin;
};

// The command's environment, decided once at launch (env_rules.h). An allow
// match always keeps a variable; otherwise a deny match strips it; a name
// neither matches is kept in denylist mode and stripped in allowlist mode.
// `set` is applied last. Base policy only: a profile is entered at an exec,
// whose envp the supervisor does not rewrite.
struct EnvironmentRules {
  EnvMode mode = EnvMode::Denylist;
  // environment.secrets: the built-in credential-name list (env_rules.h),
  // appended to `deny` by the loader after every layer.
  bool secrets = false;
  std::vector<EnvRule> allow;
  std::vector<EnvRule> deny;
  std::vector<EnvSet> set;  // one entry per name: layer order, name order within a layer
};

struct FilesystemRules {
  // filesystem.toolchains / caches / secrets (base policy only): the roots and
  // denials derived from the environment at launch (home_rules.h).
  bool toolchains = false, caches = false, secrets = false;
  std::vector<PathRule> readable_roots;
  std::vector<PathRule> writable_roots;  // writable implies readable
  std::vector<PathRule> deny_read;
  std::vector<PathRule> deny_write;
};

struct ExecRules {
  std::vector<PathRule> allow;  // empty: anything readable may be executed
  std::vector<PathRule> deny;
  std::vector<SwitchRule> switches;
};

struct NetworkRules {
  std::optional<NetworkMode> mode;  // unset in a profile: inherit the base mode
  std::vector<NetRule> allow;
};

// A named override. Its rules are checked before the base policy's, so a
// profile can allow what the base denies (ssh only under git).
struct Profile {
  std::string name;
  FilesystemRules filesystem;
  ExecRules exec;
  NetworkRules network;
  Origin origin;
};

enum class AuditLevel { Deny, Decisions, All };
enum class AuditFormat { Native, Ocsf, Ecs };

struct AuditSink {
  std::string type;  // "file", "stdout", "fd", "syslog", "kafka", "otlp"
  std::string path;  // file path or syslog address (udp|tcp|tls://host:port)
  int fd = -1;
  // file: rotate when the file would exceed maxSizeMb (0: never); keep maxFiles
  // files in all (the live one and .1 .. .N-1).
  double max_size_mb = 0;
  int max_files = 5;
  // syslog: the CA bundle that verifies a tls:// receiver, and the on-disk
  // spool that holds events while the receiver is down (size cap in MiB).
  std::string ca_file;
  std::string spool_dir;  // empty: /var/tmp
  double spool_max_mb = 256;
  // kafka: the bootstrap brokers (host:port,...) and the topic; `options` are
  // librdkafka configuration properties passed through by their own names
  // (security.protocol, sasl.*, ssl.*, compression.type...).
  std::string brokers, topic;
  std::map<std::string, std::string> options;
  // otlp: the collector's OTLP/HTTP logs endpoint (http(s)://HOST:PORT/v1/logs)
  // and extra request headers (e.g. an authorization token).
  std::string url;
  std::map<std::string, std::string> headers;
};

// One audit.redact entry: strings the audit records must not show
// (docs/policy.md). With a `/` it is a path glob (`*` stops at `/`), compiled
// absolute; without, a glob over a whole string (`*` crosses `/`). Every
// entry is tried against every path and every argv element of an event.
struct RedactPattern {
  std::string pattern;  // as written, for display and the effective policy
  bool is_path = false;
  Glob glob;            // is_path: the resolved, absolute glob (prefix: covers what is below)
  Origin origin;
};

struct AuditSettings {
  AuditLevel level = AuditLevel::Decisions;
  AuditFormat format = AuditFormat::Native;
  std::vector<AuditSink> sinks;
  std::vector<RedactPattern> redact;
  // Tamper evidence (docs/audit-events.md, "Hash chain"): every line of a
  // file sink carries the sha256 of the previous line of that sink.
  bool chain = false;
};

// Self-protection (docs/policy.md, "Self-protection"): what the supervisor
// writes or relies on for the session (audit files and their rotations, spool
// files, the policy files in effect, the supervise binary, its pins and
// runtime state). Added by the loader after every layer, never parsed from
// policy text, and checked before every profile and base rule, so no layer,
// override or profile can lift it. Ids are "self-protect:<what>".
struct SelfProtection {
  std::vector<PathRule> deny_write;
  std::vector<PathRule> deny_read;
  bool empty() const { return deny_write.empty() && deny_read.empty(); }
};

struct Policy {
  int version = 1;
  std::string name;  // preset name or policy file path
  Mode mode = Mode::Enforce;
  Fallback fallback = Fallback::FailClosed;
  std::string workspace;  // absolute
  std::string home;       // absolute, "" when unknown (for suggestions)
  FilesystemRules filesystem;
  ExecRules exec;
  NetworkRules network;  // mode always set in the base policy
  EnvironmentRules environment;
  std::map<std::string, Profile> profiles;
  // The built-in system paths (presets.cpp): readable, resp. writable, under
  // every preset. Kept apart from the user's roots so `explain` can say so.
  std::vector<PathRule> system_read;
  std::vector<PathRule> system_write;
  std::vector<std::string> keep_capabilities;  // e.g. "CAP_NET_BIND_SERVICE"
  AuditSettings audit;
  SelfProtection self_protect;
  // What the filesystem.toolchains derivation left out, and why
  // (HomeRules::notes): `doctor` shows it.
  std::vector<std::string> home_notes;
};

}  // namespace sv::policy
