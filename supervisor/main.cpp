// supervise: command-line entry point.
//
//   supervise [--policy F | --preset P] [-o key=value]... [--workspace DIR]
//             [--audit-file F] [--audit-fd N] [--quiet] -- command [args...]
//   supervise validate FILE... [--json]
//   supervise explain [...] read|write|exec|connect TARGET | EVENT_ID | -
//   supervise doctor | status | check [--policy F]
//   supervise policy init [--preset P] [-o FILE] | learn AUDIT.jsonl [-o FILE]
//   supervise verify AUDIT.jsonl...
//   supervise report AUDIT.jsonl... [--html FILE]
//   supervise serve [--socket PATH] [policy and audit options]
//   supervise exec [--socket PATH] [--cwd DIR] [--timeout S] [--env NAME]... -- command...
//   supervise agent claude-code [--install | --check [-- AGENT...]] | claude-code-hook
//   supervise mcp [--socket PATH] [policy options]
//   supervise explain --summary
//
// CLI11 throws for parse errors and --help; this is the one place that
// catches them.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <string_view>

#include "supervisor/cli/commands.h"

namespace {

using Register = void (*)(CLI::App&, sv::supervisor::CommandContext&);
struct Subcommand {
  std::string_view name;  // as its register function names it
  Register add;
};
constexpr Subcommand kSubcommands[] = {
    {"validate", sv::supervisor::registerValidate}, {"explain", sv::supervisor::registerExplain},
    {"doctor", sv::supervisor::registerDoctor},     {"status", sv::supervisor::registerStatus},
    {"check", sv::supervisor::registerCheck},       {"policy", sv::supervisor::registerPolicy},
    {"verify", sv::supervisor::registerVerify},     {"report", sv::supervisor::registerReport},
    {"serve", sv::supervisor::registerServe},       {"exec", sv::supervisor::registerExec},
    {"agent", sv::supervisor::registerAgent},       {"mcp", sv::supervisor::registerMcp}};

// `supervise [options] -- command...` with nothing before `--` that could
// name a subcommand or ask for help: the common case, whose start-up counts.
// It skips building the subcommands' option trees (CLI11 objects, tens of KB
// of fresh heap, and page faults are what a start-up spends its time on:
// docs/performance.md). Anything else registers them all, as before.
bool runsACommandOnly(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return i + 1 < argc;
    if (arg == "-h" || arg.starts_with("--help")) return false;
    for (const Subcommand& sub : kSubcommands)
      if (arg == sub.name) return false;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "supervise: run a command tree under a policy; every file, exec and connect is decided "
      "and audited.\n\nExample:\n  supervise -- git status\n  supervise --policy policy.json "
      "--audit-file audit.jsonl -- npm test",
      "supervise"};
  app.set_version_flag("--version", std::string("supervise ") + SV_VERSION);
  app.require_subcommand(0, 1);
  sv::supervisor::CommandContext ctx;
  sv::supervisor::registerRun(app, ctx);
  // `supervise exec ...` (an agent's every command through the daemon) pays
  // for its own option tree only; anything else registers them all.
  const Subcommand* only = nullptr;
  for (const Subcommand& sub : kSubcommands)
    if (argc > 1 && sub.name == "exec" && std::string_view(argv[1]) == sub.name) only = &sub;
  if (only)
    only->add(app, ctx);
  else if (!runsACommandOnly(argc, argv))
    for (const Subcommand& sub : kSubcommands) sub.add(app, ctx);
  // Every subcommand's --help ends with an example; these three are
  // registered without one.
  const std::map<std::string, std::string> examples = {
      {"doctor", "  supervise doctor\n  supervise doctor --json --policy policy.json"},
      {"status", "  cd ~/project && supervise status"},
      {"validate", "  supervise validate .supervise.json\n  supervise validate --json --preset strict "
                   "policy.json"}};
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    auto it = examples.find(sub->get_name());
    if (it != examples.end() && sub->get_footer().empty()) sub->footer("Examples:\n" + it->second);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // Usage errors are errors of supervise itself, not of the command.
    return rc == 0 ? 0 : sv::supervisor::kUsageExitCode;
  }
  return ctx.exit_code;
}
