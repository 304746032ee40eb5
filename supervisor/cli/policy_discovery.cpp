// Policy discovery (see policy_discovery.h).
#include "supervisor/cli/policy_discovery.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sv::supervisor {
namespace {

bool fileExists(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

DiscoveryInput discoveryFromEnvironment(const std::string &explicit_file) {
  DiscoveryInput in;
  in.explicit_file = explicit_file;
  if (char buf[4096]; ::getcwd(buf, sizeof buf)) in.cwd = buf;
  if (const char *x = std::getenv("XDG_CONFIG_HOME")) in.xdg_config_home = x;
  if (const char *h = std::getenv("HOME"); h && *h == '/') {
    in.home = h;
  } else {
    struct passwd pw {};
    struct passwd *out = nullptr;
    std::string buf(16384, '\0');
    if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &out) == 0 && out && out->pw_dir)
      in.home = out->pw_dir;
  }
  return in;
}

std::string discoverPolicyFile(const DiscoveryInput &in, std::string *source) {
  auto won = [source](const char *s, std::string path) {
    if (source) *source = s;
    return path;
  };
  if (!in.explicit_file.empty()) return won("--policy", in.explicit_file);
  if (!in.cwd.empty() && fileExists(in.cwd + "/.supervise.json"))
    return won("./.supervise.json", in.cwd + "/.supervise.json");
  // XDG base directory spec: a relative $XDG_CONFIG_HOME is invalid and
  // ignored.
  std::string config;
  if (!in.xdg_config_home.empty() && in.xdg_config_home.front() == '/')
    config = in.xdg_config_home;
  else if (!in.home.empty())
    config = in.home + "/.config";
  if (!config.empty() && fileExists(config + "/supervise/policy.json"))
    return won("$XDG_CONFIG_HOME/supervise/policy.json", config + "/supervise/policy.json");
  if (fileExists(in.etc_dir + "/supervise/policy.json"))
    return won("/etc/supervise/policy.json", in.etc_dir + "/supervise/policy.json");
  return won("default preset", "");
}

Result<EffectivePolicy> loadEffectivePolicy(PolicyArgs args,
                                            std::vector<policy::Diagnostic> *diags) {
  EffectivePolicy out;
  out.summary.file =
      discoverPolicyFile(discoveryFromEnvironment(args.policy_file), &out.summary.source);
  args.policy_file = out.summary.file;
  // Same precedence as policy::load(): SUPERVISE_PRESET over --preset over the
  // default.
  const char *env = std::getenv("SUPERVISE_PRESET");
  out.summary.preset = env && *env            ? env
                       : !args.preset.empty() ? args.preset
                                              : policy::LoadRequest{}.preset;
  auto loaded = loadPolicy(args, diags);
  if (!loaded) return loaded.error();
  out.policy = *loaded;
  out.summary.name = out.policy->name;
  return out;
}

std::optional<EffectivePolicy> loadEffectivePolicyOrReport(const PolicyArgs &args,
                                                           const std::string &command) {
  std::vector<policy::Diagnostic> diags;
  auto eff = loadEffectivePolicy(args, &diags);
  for (const auto &d : diags) std::fprintf(stderr, "%s\n", d.format().c_str());
  if (eff) return std::move(*eff);
  if (diags.empty()) {
    const std::string who = command.empty() ? "supervise" : "supervise " + command;
    std::fprintf(stderr, "%s: %s\n", who.c_str(), eff.error().message().c_str());
  }
  return std::nullopt;
}

}  // namespace sv::supervisor
