// The parts of $HOME a developer's tools need, and the credential stores in
// it that stay closed: the one documented list (docs/policy.md, "Toolchains,
// caches and secrets").
//
// Derived at launch from the environment supervise starts in ($PATH and the
// version managers' variables), so `supervise -- python3` works when python3
// is a pyenv shim. The derivation is pure: the caller answers the questions
// about the filesystem (HomeFacts), tests answer them from a fake home.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sv::policy {

// What the derivation may ask of the host.
struct HomeFacts {
  std::string home;                        // absolute; "" = unknown (no home rules)
  std::map<std::string, std::string> env;  // the launching environment (PATH, PYENV_ROOT, ...)
  std::function<bool(const std::string&)> is_dir;
  std::function<bool(const std::string&)> exists;
  // The physical path (symlinks resolved); nullopt when it does not resolve.
  std::function<std::optional<std::string>(const std::string&)> real_path;
  // The symlinks directly in a directory (absolute paths), at most `limit`.
  std::function<std::vector<std::string>(const std::string&, size_t limit)> symlinks_in;
};

// One derived root: readable and executable (toolchain) or writable (cache).
struct HomeRule {
  std::string id;      // "toolchain:pyenv", "cache:npm"
  std::string path;    // absolute, lexically normal
  std::string reason;  // why it is open (or, for a secret, closed)
  bool present = true; // it existed when derived
};

struct HomeRules {
  std::vector<HomeRule> toolchains;
  std::vector<HomeRule> caches;
  std::vector<HomeRule> secrets;  // every homeSecrets() entry, expanded
  // What was left out and why ($PATH entries that would open $HOME, ...):
  // `doctor` shows them.
  std::vector<std::string> notes;
};

HomeRules deriveHomeRules(const HomeFacts& facts);

// The directory that holds the whole toolchain `program` belongs to, for a
// suggestion that makes a denied exec or read work: a known layout's root
// (~/.pyenv for ~/.pyenv/shims/python3), else the parent of its nearest
// `bin` directory (a venv, a prefix), else `program` itself. Never $HOME or
// a directory above it. Pure: lexical, on the layouts' default places.
std::string toolchainRootFor(std::string_view home, std::string_view program);

// A credential store under $HOME: reads and writes denied in every preset
// (filesystem.secrets). `path` is "~/"-relative and may end in "/**"-free
// names only: each entry covers what is below it.
struct SecretEntry {
  std::string_view id;  // "secret:ssh"
  std::string_view path;
  std::string_view reason;
};
const std::vector<SecretEntry>& homeSecrets();

}  // namespace sv::policy
