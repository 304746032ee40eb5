// supervise: command-line entry point.
//
//   supervise [--policy F | --preset P] [-o key=value]... [--workspace DIR]
//             [--audit-file F] [--audit-fd N] [--quiet] -- command [args...]
//   supervise validate FILE... [--json]
//   supervise explain [...] read|write|exec|connect TARGET | EVENT_ID | -
//   supervise doctor | status | check [--policy F]
//   supervise policy init [--preset P] [-o FILE] | learn AUDIT.jsonl [-o FILE]
//
// CLI11 throws for parse errors and --help; this is the one place that
// catches them.
#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "supervisor/commands.h"

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
  sv::supervisor::registerValidate(app, ctx);
  sv::supervisor::registerExplain(app, ctx);
  sv::supervisor::registerDoctor(app, ctx);
  sv::supervisor::registerStatus(app, ctx);
  sv::supervisor::registerCheck(app, ctx);
  sv::supervisor::registerPolicy(app, ctx);
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
