// The exec client's options and request; see exec_args.h.
#include "supervisor/serve/exec_args.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "supervisor/serve/client.h"

namespace sv::supervisor::serve {

void addExecOptions(CLI::App& app, ExecArgs& args) {
  app.add_option("--socket", args.socket, "the daemon's socket (default as supervise serve)");
  app.add_option("--profile", args.profile, "the policy profile the command starts in");
  app.add_option("--cwd", args.cwd, "the command's working directory (default: this one)");
  app.add_option("--timeout", args.timeout_s,
                 "kill the command after S seconds (exit 124, as timeout(1))")
      ->check(CLI::Range(0.0, 7.0 * 24 * 3600));
  app.add_option("--env", args.env,
                 "forward a variable: NAME (its value here) or NAME=VALUE (repeatable); the "
                 "command gets the daemon's environment with these on top")
      ->allow_extra_args(false);
  app.add_option("command", args.command, "the command to run, after --")->required();
}

int runExec(const ExecArgs& args) {
  ExecRequest r;
  r.argv = args.command;
  std::error_code ec;
  const std::filesystem::path here = std::filesystem::current_path(ec);
  r.cwd = args.cwd.empty() ? here.string() : std::filesystem::absolute(args.cwd, ec).string();
  r.profile = args.profile;
  r.timeout_ms = static_cast<uint64_t>(std::llround(args.timeout_s * 1000));
  const mode_t mask = ::umask(022);
  ::umask(mask);
  r.umask = mask;
  for (const std::string& e : args.env) {
    const size_t eq = e.find('=');
    if (eq != std::string::npos) {
      r.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
    } else if (const char* v = std::getenv(e.c_str())) {
      r.env.emplace_back(e, v);
    } else {
      std::fprintf(stderr, "supervise exec: --env %s: not set here\n", e.c_str());
      return sv::kExitUsage;
    }
  }
  return runExecClient(args.socket.empty() ? defaultSocketPath() : args.socket, r);
}

}  // namespace sv::supervisor::serve
