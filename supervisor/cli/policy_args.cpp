// PolicyArgs and loadPolicy() (see policy_args.h).
#include "supervisor/cli/policy_args.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/read_file.h"
#include "policy/path.h"
#include "supervisor/cli/real_paths.h"

extern char** environ;

namespace sv::supervisor {

void PolicyArgs::addTo(CLI::App& app) {
  app.add_option("-p,--policy", policy_file, "policy file (JSON), layered on the preset");
  app.add_option("--preset", preset,
                 "base preset: code-sandbox (default), audit-only, strict, none");
  app.add_option("-o,--set", overrides,
                 "override a policy key: key=value, or key+=value to append to a list "
                 "(e.g. -o network.mode=none -o filesystem.writableRoots+=/data)")
      ->allow_extra_args(false);  // one value per -o, so `--` still starts the command
  app.add_option("--workspace", workspace, "the workspace relative rules refer to (default: cwd)");
}

Result<std::string> readTextFile(const std::string& path) {
  auto text = readWholeFile(path, kMaxPolicyFileBytes);
  if (text) return text;
  if (text.error().code == EFBIG)
    return Error{EFBIG, "read policy file " + path + ": larger than " +
                            std::to_string(kMaxPolicyFileBytes >> 20) + " MiB"};
  return Error{text.error().code, "read policy file " + path};
}

std::map<std::string, std::string> superviseEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    if (!kv.starts_with("SUPERVISE_")) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

namespace {

Result<std::string> currentDir() {
  std::string buf(4096, '\0');
  if (!::getcwd(buf.data(), buf.size())) return errnoError("getcwd");
  buf.resize(std::char_traits<char>::length(buf.c_str()));
  return buf;
}

std::string homeDir() {
  if (const char* h = std::getenv("HOME"); h && *h == '/') return h;
  struct passwd pw {};
  struct passwd* out = nullptr;
  std::string buf(16384, '\0');
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &out) == 0 && out && out->pw_dir) {
    return out->pw_dir;
  }
  return "";
}

// `path` (absolute) as written, and its physical form when they differ: the
// supervisor decides on the path it resolves (symlinks followed), so a rule
// on a name reached through a symlinked directory needs both. The file need
// not exist yet (an audit file is created by the session): its directory is
// resolved.
std::vector<std::string> lexicalAndPhysical(const std::string& path) {
  std::vector<std::string> out{path};
  std::string physical;
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    physical = real;
    std::free(real);
  } else {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    if (char* real_dir = ::realpath(dir.c_str(), nullptr)) {
      physical = policy::normalizePath(real_dir, path.substr(slash + 1));
      std::free(real_dir);
    }
  }
  if (!physical.empty() && physical != path) out.push_back(physical);
  return out;
}

std::string selfExe() {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size());
  if (n <= 0 || size_t(n) >= buf.size()) return "";
  buf.resize(size_t(n));
  return buf;
}

void addSelfProtect(policy::LoadRequest& req, const std::string& what, const std::string& path) {
  if (path.empty() || path.front() != '/') return;
  for (auto& p : lexicalAndPhysical(path)) req.self_protect.push_back({what, std::move(p), "", false});
}

// The facts deriveHomeRules() asks for, answered from this host.
policy::HomeFacts hostHomeFacts(const std::string& home) {
  policy::HomeFacts f;
  f.home = home;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos)
      f.env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  f.exists = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
  };
  f.is_dir = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  f.real_path = [known = std::make_shared<RealPaths>()](const std::string& p) {
    return known->of(p);
  };
  f.symlinks_in = [](const std::string& dir, size_t limit) {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (struct dirent* e = ::readdir(d)) {
      if (out.size() >= limit) break;
      if (e->d_type == DT_LNK) out.push_back(dir + "/" + e->d_name);
    }
    ::closedir(d);
    return out;
  };
  return f;
}

}  // namespace

Result<policy::LoadRequest> makeLoadRequest(const PolicyArgs& args) {
  policy::LoadRequest req;
  auto cwd = currentDir();
  if (!cwd) return cwd.error();
  req.workspace = args.workspace.empty() ? *cwd : policy::normalizePath(*cwd, args.workspace);
  req.home = homeDir();
  req.home_rules = policy::deriveHomeRules(hostHomeFacts(req.home));
  req.env = superviseEnv();
  // SUPERVISE_PRESET, when set, still wins (load() applies it): the
  // environment is the top layer, so an operator can pin a floor for a CI job.
  if (!args.preset.empty()) req.preset = args.preset;
  req.overrides = args.overrides;
  if (!args.policy_file.empty()) {
    auto text = readTextFile(args.policy_file);
    if (!text) return text.error();
    req.files.push_back({args.policy_file, std::move(*text)});
    addSelfProtect(req, "policy-file", policy::normalizePath(*cwd, args.policy_file));
  }
  // Paths on the command line are relative to the cwd (where the session
  // opens them), not to the workspace.
  for (const auto& f : args.audit_files)
    if (!f.empty()) addSelfProtect(req, "audit-file", policy::normalizePath(*cwd, f));
  if (const size_t slash = args.daemon_socket.rfind('/'); slash != std::string::npos && slash > 0)
    addSelfProtect(req, "daemon-socket", args.daemon_socket.substr(0, slash));
  addSelfProtect(req, "binary", selfExe());
  addSelfProtect(req, "bpf-pins", kBpfPinDir);
  addSelfProtect(req, "runtime-state", kRuntimeStateDir);
  return req;
}

Result<std::shared_ptr<const policy::Policy>> loadPolicy(const PolicyArgs& args,
                                                         std::vector<policy::Diagnostic>* diags) {
  auto req = makeLoadRequest(args);
  if (!req) return req.error();
  policy::LoadResult res = policy::load(*req);
  if (diags) diags->insert(diags->end(), res.diagnostics.begin(), res.diagnostics.end());
  if (!res.ok()) return Error{0, "invalid policy"};
  return res.policy;
}

}  // namespace sv::supervisor
