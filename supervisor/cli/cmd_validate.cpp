// `supervise validate FILE... [--json] [--preset P]`: checks policy files.
//
// Each file is loaded on top of the preset exactly as `supervise -p FILE`
// would load it (relative rules against the cwd), so what validates here is
// what runs. Exit 0 when every file is valid (warnings are printed), 2 when
// any has an error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/policy_args.h"

namespace sv::supervisor {
namespace {

constexpr int kInvalid = 2;

nlohmann::json diagJson(const policy::Diagnostic& d) {
  return {{"file", d.file},     {"line", d.line},
          {"column", d.column}, {"severity", d.warning ? "warning" : "error"},
          {"message", d.message}};
}

}  // namespace

void registerValidate(CLI::App& app, CommandContext& ctx) {
  struct Args {
    std::vector<std::string> files;
    std::string preset = "code-sandbox";
    std::string workspace;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("validate", "check policy files; exit 0 valid, 2 invalid");
  sub->add_option("files", args->files, "policy files (JSON)")->required();
  sub->add_option("--preset", args->preset, "preset the files are layered on (default code-sandbox)");
  sub->add_option("--workspace", args->workspace, "workspace for relative rules (default: cwd)");
  sub->add_flag("--json", args->json, "print one JSON report on stdout");
  sub->callback([&ctx, args] {
    try {
      nlohmann::json report = {{"valid", true}, {"files", nlohmann::json::array()}};
      bool all_ok = true;
      for (const auto& file : args->files) {
        PolicyArgs pa;
        pa.policy_file = file;
        pa.preset = args->preset;
        pa.workspace = args->workspace;
        std::vector<policy::Diagnostic> diags;
        bool ok = true;
        auto req = makeLoadRequest(pa);
        if (!req) {
          ok = false;
          diags.push_back({file, 0, 0, req.error().message(), false});
        } else {
          // The environment must not change what a file means when validated.
          req->env.clear();
          policy::LoadResult res = policy::load(*req);
          diags = res.diagnostics;
          ok = res.ok();
        }
        all_ok = all_ok && ok;
        nlohmann::json entry = {{"file", file}, {"valid", ok}, {"diagnostics", nlohmann::json::array()}};
        size_t warnings = 0;
        for (const auto& d : diags) {
          entry["diagnostics"].push_back(diagJson(d));
          warnings += d.warning;
          if (!args->json) std::fprintf(stderr, "%s\n", d.format().c_str());
        }
        report["files"].push_back(std::move(entry));
        if (!args->json) {
          if (ok) {
            std::printf("%s: valid%s\n", file.c_str(),
                        warnings ? (" (" + std::to_string(warnings) + " warning" +
                                    (warnings > 1 ? "s" : "") + ")").c_str()
                                 : "");
          } else {
            std::printf("%s: invalid\n", file.c_str());
          }
        }
      }
      report["valid"] = all_ok;
      if (args->json) std::printf("%s\n", report.dump(2).c_str());
      ctx.exit_code = all_ok ? 0 : kInvalid;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "supervise validate: %s\n", e.what());
      ctx.exit_code = kInvalid;
    }
  });
}

}  // namespace sv::supervisor
