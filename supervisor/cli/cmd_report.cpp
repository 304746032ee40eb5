// `supervise report AUDIT.jsonl... [--html FILE]`: what happened in the
// sessions of audit trails of any format (native, OCSF, ECS): sessions,
// decisions per category and outcome, the denied rules with examples, the
// process tree. The files are streamed and aggregated in bounded memory
// (supervisor/report/); malformed lines are counted, never fatal. Exit 0, or
// 2 for usage and unreadable files.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "supervisor/cli/commands.h"
#include "supervisor/report/aggregate.h"
#include "supervisor/report/reader.h"
#include "supervisor/report/render.h"

namespace sv::supervisor {
namespace {

int runReport(const std::vector<std::string>& files, const std::string& html) {
  report::Report rep;
  for (const std::string& file : files) {
    std::string error;
    if (!report::readTrail(file, &rep, &error)) {
      std::fprintf(stderr, "supervise report: %s\n", error.c_str());
      return kUsageExitCode;
    }
  }
  report::RenderOptions options;
  options.files = files;
  const std::string text = report::renderText(rep, options);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!html.empty()) {
    std::ofstream out(html, std::ios::binary | std::ios::trunc);
    const std::string page = report::renderHtml(rep, options);
    out.write(page.data(), static_cast<std::streamsize>(page.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "supervise report: cannot write %s\n", html.c_str());
      return kUsageExitCode;
    }
    std::printf("\nhtml: %s\n", html.c_str());
  }
  return 0;
}

}  // namespace

void registerReport(CLI::App& app, CommandContext& ctx) {
  struct Args {
    std::vector<std::string> files;
    std::string html;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "report",
      "summarize audit files (native, OCSF or ECS): sessions, decisions per category and "
      "outcome, the denied rules, the process tree; --html writes a self-contained page");
  sub->add_option("files", args->files, "audit files (JSON lines), - for stdin")->required();
  sub->add_option("--html", args->html, "also write a self-contained HTML report to FILE");
  sub->footer(
      "Examples:\n"
      "  supervise report audit.jsonl\n"
      "  supervise report audit.jsonl.1 audit.jsonl --html report.html");
  sub->callback([&ctx, args] {
    ctx.exit_code = runGuarded("report", kUsageExitCode,
                               [&] { return runReport(args->files, args->html); });
  });
}

}  // namespace sv::supervisor
