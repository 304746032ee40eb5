// Toolchain, cache and secret lists (see home_rules.h and docs/policy.md).
//
// A toolchain root is the directory that holds the whole toolchain, not the
// shim directory on $PATH: pyenv's shims run `pyenv exec`, which runs a
// version under ~/.pyenv/versions, so the root is ~/.pyenv. Roots are
// readable and executable, never writable: a tree that could write where the
// user's shell finds programs would run its code outside the sandbox later.
// Caches are writable: that is the one trade-off (a poisoned cache is read by
// the next build), and `filesystem.caches: false` turns it off.
#include "policy/home_rules.h"

#include <algorithm>
#include <set>

#include "policy/path.h"
#include "policy/presets.h"

namespace sv::policy {
namespace {

// Where a tool keeps itself: `var` (when set) or each default, "~/"-relative
// or absolute; `sub` is appended to a variable's value (CARGO_HOME/bin).
struct Layout {
  std::string_view id;
  std::string_view var;
  std::string_view sub;
  std::vector<std::string_view> defaults;
  std::string_view what;
};

// Version managers and language homes, each the root of the whole toolchain.
const std::vector<Layout>& toolchainLayouts() {
  static const std::vector<Layout> kLayouts = {
      {"pyenv", "PYENV_ROOT", "", {"~/.pyenv"}, "pyenv (shims, versions)"},
      {"rbenv", "RBENV_ROOT", "", {"~/.rbenv"}, "rbenv"},
      {"rvm", "rvm_path", "", {"~/.rvm"}, "RVM"},
      {"nvm", "NVM_DIR", "", {"~/.nvm"}, "nvm (node versions)"},
      {"fnm", "FNM_DIR", "", {"~/.local/share/fnm", "~/.fnm"}, "fnm (node versions)"},
      {"volta", "VOLTA_HOME", "", {"~/.volta"}, "Volta"},
      {"rustup", "RUSTUP_HOME", "", {"~/.rustup"}, "rustup (Rust toolchains)"},
      // CARGO_HOME holds credentials.toml: only its bin/ is a toolchain.
      {"cargo", "CARGO_HOME", "/bin", {"~/.cargo/bin"}, "cargo-installed programs"},
      {"go", "GOROOT", "", {"~/sdk", "~/.go"}, "Go SDK"},
      {"go-bin", "GOBIN", "", {"~/go/bin"}, "go-installed programs"},
      {"sdkman", "SDKMAN_DIR", "", {"~/.sdkman"}, "SDKMAN! (JDKs, Gradle, ...)"},
      {"bun", "BUN_INSTALL", "", {"~/.bun"}, "Bun"},
      {"deno", "DENO_INSTALL", "", {"~/.deno"}, "Deno"},
      {"asdf", "ASDF_DATA_DIR", "", {"~/.asdf"}, "asdf"},
      {"mise", "MISE_DATA_DIR", "", {"~/.local/share/mise"}, "mise"},
      {"pipx", "PIPX_HOME", "", {"~/.local/share/pipx", "~/.local/pipx"}, "pipx venvs"},
      {"uv-python", "UV_PYTHON_INSTALL_DIR", "", {"~/.local/share/uv/python"}, "uv's Pythons"},
      {"uv-tools", "UV_TOOL_DIR", "", {"~/.local/share/uv/tools"}, "uv tools"},
      {"pnpm", "PNPM_HOME", "", {"~/.local/share/pnpm"}, "pnpm"},
      {"poetry", "POETRY_HOME", "", {"~/.local/share/pypoetry"}, "Poetry"},
      {"local-bin", "", "", {"~/.local/bin"}, "programs installed for the user"},
      {"local-lib", "", "", {"~/.local/lib"}, "pip --user packages"},
      {"conda", "", "", {"~/miniconda3", "~/anaconda3", "~/miniforge3", "~/mambaforge"}, "conda"},
      {"homebrew", "HOMEBREW_PREFIX", "", {"/home/linuxbrew/.linuxbrew", "~/.linuxbrew"}, "Homebrew"},
      {"nix", "", "", {"~/.nix-profile", "/nix"}, "Nix profile and store"},
      {"ghcup", "", "", {"~/.ghcup"}, "GHCup (Haskell)"},
      {"opam", "OPAMROOT", "", {"~/.opam"}, "opam (OCaml)"},
      {"elan", "ELAN_HOME", "", {"~/.elan"}, "elan (Lean)"},
      {"juliaup", "", "", {"~/.juliaup"}, "juliaup"},
      {"dotnet", "DOTNET_ROOT", "", {"~/.dotnet"}, ".NET SDK"},
      {"asdf-versions", "", "", {"~/.tool-versions"}, "asdf/mise global versions file"},
  };
  return kLayouts;
}

// Caches and state directories that builds write.
const std::vector<Layout>& cacheLayouts() {
  static const std::vector<Layout> kLayouts = {
      {"npm", "npm_config_cache", "", {"~/.npm"}, "npm cache"},
      {"yarn", "YARN_CACHE_FOLDER", "", {"~/.cache/yarn", "~/.yarn/berry"}, "Yarn cache"},
      {"pnpm", "", "", {"~/.cache/pnpm", "~/.local/share/pnpm/store"}, "pnpm store"},
      {"pip", "PIP_CACHE_DIR", "", {"~/.cache/pip"}, "pip cache"},
      {"uv", "UV_CACHE_DIR", "", {"~/.cache/uv"}, "uv cache"},
      {"poetry", "", "", {"~/.cache/pypoetry"}, "Poetry cache"},
      {"cargo-registry", "CARGO_HOME", "/registry", {"~/.cargo/registry"}, "cargo registry cache"},
      {"cargo-git", "CARGO_HOME", "/git", {"~/.cargo/git"}, "cargo git cache"},
      {"go-mod", "GOMODCACHE", "", {"~/go/pkg/mod"}, "Go module cache"},
      {"go-build", "GOCACHE", "", {"~/.cache/go-build"}, "Go build cache"},
      {"gradle", "", "", {"~/.gradle/caches", "~/.gradle/wrapper"}, "Gradle caches"},
      {"maven", "", "", {"~/.m2/repository"}, "Maven repository"},
      {"ccache", "CCACHE_DIR", "", {"~/.cache/ccache", "~/.ccache"}, "ccache"},
      {"sccache", "SCCACHE_DIR", "", {"~/.cache/sccache"}, "sccache"},
      {"node-gyp", "", "", {"~/.cache/node-gyp"}, "node-gyp headers"},
      {"deno", "DENO_DIR", "", {"~/.cache/deno"}, "Deno cache"},
      {"bun", "", "", {"~/.bun/install/cache"}, "Bun cache"},
      {"composer", "COMPOSER_CACHE_DIR", "", {"~/.cache/composer"}, "Composer cache"},
      {"pre-commit", "PRE_COMMIT_HOME", "", {"~/.cache/pre-commit"}, "pre-commit environments"},
      {"bazel", "", "", {"~/.cache/bazel"}, "Bazel output base"},
  };
  return kLayouts;
}

// "~/x" → home/x; an absolute path stays; anything else is not a place ("").
std::string expandHome(std::string_view home, std::string_view p) {
  if (p.starts_with("~/")) return normalizePath(home, p.substr(2));
  if (p.starts_with("/")) return normalizePath("/", p);
  return "";
}

std::string parentPath(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}
std::string baseName(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// The directory a program is installed under: the parent of its nearest
// `bin` directory (a venv, a node version, a prefix), else its directory.
std::string installRoot(const std::string& program) {
  const std::string dir = parentPath(program);
  for (std::string d = dir; d != "/" && !d.empty(); d = parentPath(d)) {
    if (baseName(d) == "bin") return parentPath(d);
  }
  return dir;
}

class Deriver {
 public:
  explicit Deriver(const HomeFacts& f) : f_(f) {}

  HomeRules run() {
    for (const auto& l : toolchainLayouts()) addLayout(l, out_.toolchains, "toolchain:");
    for (const auto& l : cacheLayouts()) addLayout(l, out_.caches, "cache:");
    addPathEntries();
    for (const auto& s : homeSecrets()) {
      const std::string path = expand(s.path);
      out_.secrets.push_back({std::string(s.id), path, std::string(s.reason), f_.exists(path)});
    }
    return std::move(out_);
  }

 private:
  std::string env(std::string_view name) const {
    auto it = f_.env.find(std::string(name));
    return it == f_.env.end() ? "" : it->second;
  }

  std::string expand(std::string_view p) const { return expandHome(f_.home, p); }

  // Readable already: a system path or a toolchain root.
  bool readable(const std::string& path) const {
    for (auto sys : systemReadPaths())
      if (isUnder(path, sys)) return true;
    return under(path, out_.toolchains);
  }
  static bool under(const std::string& path, const std::vector<HomeRule>& rules) {
    return std::any_of(rules.begin(), rules.end(),
                       [&](const HomeRule& r) { return isUnder(path, r.path); });
  }

  // A root that would open $HOME itself (or what holds it), or a credential
  // store, is never derived: it is left out and said.
  bool safe(const std::string& path, std::string_view why) {
    std::string problem;
    if (path == "/" || isUnder(f_.home, path)) {
      problem = "it would open the home directory";
    } else {
      for (const auto& s : homeSecrets()) {
        const std::string secret = expand(s.path);
        if (isUnder(secret, path) || isUnder(path, secret)) {
          problem = "it holds " + std::string(s.id);
          break;
        }
      }
    }
    if (problem.empty()) return true;
    out_.notes.push_back(path + " (" + std::string(why) + ") left out: " + problem);
    return false;
  }

  void add(std::vector<HomeRule>& dst, std::string id, const std::string& path,
           std::string reason) {
    for (const auto& r : dst)
      if (r.path == path) return;
    if (!safe(path, id)) return;
    // One id per rule (validate.cpp): a second place of one layout is named.
    for (const auto& r : dst)
      if (r.id == id) id += ":" + baseName(path);
    dst.push_back({std::move(id), path, std::move(reason)});
  }

  void addLayout(const Layout& l, std::vector<HomeRule>& dst, std::string_view prefix) {
    std::vector<std::string> candidates;
    if (!l.var.empty() && !env(l.var).empty()) {
      candidates.push_back(expand(env(l.var) + std::string(l.sub)));
    } else {
      for (auto d : l.defaults) candidates.push_back(expand(d));
    }
    const std::string source = !l.var.empty() && !env(l.var).empty()
                                   ? "$" + std::string(l.var)
                                   : std::string("its default place");
    const bool cache = &dst == &out_.caches;
    for (const auto& c : candidates) {
      if (c.empty() || !f_.exists(c)) continue;
      if (cache ? under(c, out_.caches) : readable(c)) continue;
      add(dst, std::string(prefix) + std::string(l.id), c,
          std::string(l.what) + " (" + source + ")");
    }
  }

  // $PATH entries no layout and no system path covers: the entry itself, and
  // where its symlinks lead (~/.local/bin/tool → a venv elsewhere).
  void addPathEntries() {
    const std::string path = env("PATH");
    std::set<std::string> seen;  // rustup and pyenv put their directory in twice
    size_t start = 0;
    while (start <= path.size()) {
      size_t colon = path.find(':', start);
      std::string entry = path.substr(start, colon == std::string::npos ? colon : colon - start);
      start = colon == std::string::npos ? path.size() + 1 : colon + 1;
      if (entry.empty() || entry.front() != '/') continue;  // "" and "." mean the cwd
      entry = normalizePath("/", entry);
      if (!seen.insert(entry).second || !f_.is_dir(entry)) continue;
      if (!readable(entry)) add(out_.toolchains, "toolchain:path:" + entry, entry, "a $PATH entry");
      if (!isUnder(entry, f_.home)) continue;  // system directories: thousands of links
      for (const auto& link : f_.symlinks_in(entry, kMaxLinksPerEntry)) {
        auto real = f_.real_path(link);
        if (!real || readable(*real)) continue;
        const std::string root = installRoot(*real);
        add(out_.toolchains, "toolchain:path:" + root, root, "where " + link + " leads");
      }
    }
  }

  static constexpr size_t kMaxLinksPerEntry = 512;
  const HomeFacts& f_;
  HomeRules out_;
};

}  // namespace

std::string toolchainRootFor(std::string_view home, std::string_view program) {
  const std::string path = normalizePath("/", program);
  std::string root;
  for (const auto& l : toolchainLayouts())
    for (auto d : l.defaults)
      if (const std::string place = expandHome(home, d); !home.empty() && isUnder(path, place))
        root = place;
  if (root.empty()) {
    const std::string in = installRoot(path);
    root = in != parentPath(path) ? in : path;  // no bin/: the file alone
  }
  if (root == "/" || (!home.empty() && isUnder(std::string(home), root))) return path;
  return root;
}

HomeRules deriveHomeRules(const HomeFacts& facts) {
  if (facts.home.empty() || facts.home.front() != '/' || !facts.exists || !facts.is_dir ||
      !facts.real_path || !facts.symlinks_in)
    return {};
  return Deriver(facts).run();
}

const std::vector<SecretEntry>& homeSecrets() {
  static const std::vector<SecretEntry> kSecrets = {
      {"secret:ssh", "~/.ssh", "SSH keys, and ssh config that runs commands (ProxyCommand)"},
      {"secret:gnupg", "~/.gnupg", "GnuPG private keys"},
      {"secret:aws", "~/.aws", "AWS credentials"},
      {"secret:azure", "~/.azure", "Azure CLI credentials"},
      {"secret:gcloud", "~/.config/gcloud", "Google Cloud credentials"},
      {"secret:oci", "~/.oci", "Oracle Cloud credentials"},
      {"secret:doctl", "~/.config/doctl", "DigitalOcean token"},
      {"secret:kube", "~/.kube", "Kubernetes cluster credentials"},
      {"secret:docker", "~/.docker/config.json", "container registry credentials"},
      {"secret:gh", "~/.config/gh", "GitHub CLI token"},
      {"secret:hub", "~/.config/hub", "GitHub token (hub)"},
      {"secret:glab", "~/.config/glab-cli", "GitLab CLI token"},
      {"secret:netrc", "~/.netrc", "passwords for hosts (curl, git, heroku)"},
      {"secret:git-credentials", "~/.git-credentials", "git's stored passwords"},
      {"secret:git-credentials-xdg", "~/.config/git/credentials", "git's stored passwords"},
      {"secret:npmrc", "~/.npmrc", "npm registry tokens"},
      {"secret:yarnrc", "~/.yarnrc.yml", "Yarn registry tokens"},
      {"secret:pypirc", "~/.pypirc", "PyPI upload tokens"},
      {"secret:gem", "~/.gem/credentials", "RubyGems API key"},
      {"secret:cargo", "~/.cargo/credentials.toml", "crates.io token"},
      {"secret:cargo-legacy", "~/.cargo/credentials", "crates.io token"},
      {"secret:gradle", "~/.gradle/gradle.properties", "Gradle repository credentials"},
      {"secret:maven", "~/.m2/settings.xml", "Maven server passwords"},
      {"secret:maven-security", "~/.m2/settings-security.xml", "Maven master password"},
      {"secret:terraform", "~/.terraform.d/credentials.tfrc.json", "Terraform Cloud token"},
      {"secret:vault", "~/.vault-token", "HashiCorp Vault token"},
      {"secret:pgpass", "~/.pgpass", "PostgreSQL passwords"},
      {"secret:mysql", "~/.my.cnf", "MySQL passwords"},
      {"secret:password-store", "~/.password-store", "pass password store"},
      {"secret:keyrings", "~/.local/share/keyrings", "desktop keyrings"},
      {"secret:kwallet", "~/.local/share/kwalletd", "KDE wallet"},
      {"secret:1password", "~/.config/op", "1Password CLI sessions"},
      {"secret:huggingface", "~/.cache/huggingface/token", "Hugging Face token"},
      {"secret:huggingface-legacy", "~/.huggingface/token", "Hugging Face token"},
      {"secret:claude", "~/.claude/.credentials.json", "Claude Code credentials"},
      {"secret:codex", "~/.codex/auth.json", "Codex CLI credentials"},
      {"secret:sops-age", "~/.config/sops/age", "age keys (sops)"},
  };
  return kSecrets;
}

}  // namespace sv::policy
