// Built-in presets (embedded JSON, parsed by the same loader as a policy file)
// and the system path lists shared by every preset.
//
// The system read list is what ordinary programs need to start at all
// (loader, libc, locale, CA certificates, /proc for their own status); it is
// readable, never writable. The device list is what shells and tools open for
// writing as a matter of course (/dev/null above all). /tmp and /var/tmp are
// readable everywhere and made writable by the code-sandbox preset only.
// Every preset strips credential-looking variables from the command's
// environment (environment.secrets, env_rules.h); audit-only, being in audit
// mode, strips nothing and records what it would strip.
#include "policy/presets.h"

namespace sv::policy {
namespace {

constexpr std::string_view kCodeSandbox = R"json({
  "version": 1,
  "mode": "enforce",
  "fallback": "fail-closed",
  "filesystem": {
    "toolchains": true,
    "caches": true,
    "secrets": true,
    "readableRoots": [
      {"path": "~/.gitconfig", "id": "home-gitconfig", "reason": "git reads the user's configuration"},
      {"path": "~/.config/git", "id": "home-config-git", "reason": "git reads the user's configuration"}
    ],
    "writableRoots": [
      {"path": ".", "id": "workspace", "reason": "the workspace is the sandboxed tree's to edit"},
      {"path": "/tmp", "id": "tmp", "reason": "many tools need a temp dir"},
      {"path": "/var/tmp", "id": "var-tmp", "reason": "many tools need a temp dir"}
    ],
    "denyWrite": [
      {"path": ".env", "id": "deny-write-env", "reason": "secrets stay out of the agent's reach"},
      {"path": ".env.*", "id": "deny-write-env-variants", "reason": "secrets stay out of the agent's reach"},
      {"path": ".git/config", "id": "deny-write-git-config", "reason": "git config can run commands (core.sshCommand, hooks path)"},
      {"path": ".git/hooks/**", "id": "deny-write-git-hooks", "reason": "git hooks run code on the next git command"},
      {"path": ".supervise.json", "id": "deny-write-supervise-policy", "reason": "the sandbox's own policy file (config discovery) is not the sandboxed tree's to change"}
    ]
  },
  "network": {"mode": "localhost"},
  "environment": {"mode": "denylist", "secrets": true},
  "audit": {"level": "decisions", "format": "native"}
}
)json";

constexpr std::string_view kAuditOnly = R"json({
  "version": 1,
  "mode": "audit",
  "fallback": "fail-closed",
  "filesystem": {
    "secrets": true,
    "writableRoots": [
      {"path": "/", "id": "everything", "reason": "audit-only records, it does not restrict"}
    ]
  },
  "network": {"mode": "all"},
  "environment": {"mode": "denylist", "secrets": true},
  "audit": {"level": "all", "format": "native"}
}
)json";

constexpr std::string_view kStrict = R"json({
  "version": 1,
  "mode": "enforce",
  "fallback": "fail-closed",
  "filesystem": {
    "toolchains": true,
    "secrets": true,
    "readableRoots": [
      {"path": ".", "id": "workspace-read-only", "reason": "strict: the workspace is read-only"},
      {"path": "~/.gitconfig", "id": "home-gitconfig", "reason": "git reads the user's configuration"},
      {"path": "~/.config/git", "id": "home-config-git", "reason": "git reads the user's configuration"}
    ],
    "denyWrite": [
      {"path": ".env", "id": "deny-write-env", "reason": "secrets stay out of the agent's reach"},
      {"path": ".env.*", "id": "deny-write-env-variants", "reason": "secrets stay out of the agent's reach"},
      {"path": ".git/config", "id": "deny-write-git-config", "reason": "git config can run commands (core.sshCommand, hooks path)"},
      {"path": ".git/hooks/**", "id": "deny-write-git-hooks", "reason": "git hooks run code on the next git command"},
      {"path": ".supervise.json", "id": "deny-write-supervise-policy", "reason": "the sandbox's own policy file (config discovery) is not the sandboxed tree's to change"}
    ]
  },
  "network": {"mode": "none"},
  "environment": {"mode": "denylist", "secrets": true},
  "audit": {"level": "decisions", "format": "native"}
}
)json";

}  // namespace

std::optional<std::string_view> presetText(std::string_view name) {
  if (name == "code-sandbox") return kCodeSandbox;
  if (name == "audit-only") return kAuditOnly;
  if (name == "strict") return kStrict;
  return std::nullopt;
}

std::vector<std::string> presetNames() { return {"code-sandbox", "audit-only", "strict"}; }

const std::vector<std::string_view>& systemReadPaths() {
  static const std::vector<std::string_view> kPaths = {
      "/usr",        "/lib",         "/lib32",      "/lib64",     "/libx32",
      "/bin",        "/sbin",        "/etc",        "/opt",       "/var/lib",
      "/run",        "/tmp",         "/var/tmp",    "/dev/null",  "/dev/zero",
      "/dev/full",   "/dev/random",  "/dev/urandom", "/dev/tty",  "/dev/pts",
      "/dev/ptmx",   "/dev/shm",     "/proc",       "/sys/devices/system/cpu",
      "/sys/fs/cgroup",
  };
  return kPaths;
}

const std::vector<std::string_view>& systemWritePaths() {
  static const std::vector<std::string_view> kPaths = {
      "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm",
  };
  return kPaths;
}

bool isNoExecSystemPath(std::string_view path) {
  for (std::string_view root : {"/dev", "/proc", "/sys"}) {
    if (path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/')) {
      return true;
    }
  }
  return false;
}

}  // namespace sv::policy
