// `supervise status [policy flags] [--json]`
//
// The effective policy for the current directory: which policy file won the
// discovery (--policy, ./.supervise.json,
// $XDG_CONFIG_HOME/supervise/policy.json, /etc/supervise/policy.json, default
// preset), the preset under it, mode, fallback, network mode and the engine per
// feature on this host. Exit 0, or 2 for a bad policy; whether the host can
// enforce it is doctor's exit code.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/doctor_report.h"
#include "supervisor/cli/policy_args.h"

namespace sv::supervisor {

void registerStatus(CLI::App &app, CommandContext &ctx) {
  struct Args {
    PolicyArgs policy;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App *sub = app.add_subcommand("status",
                                     "show the effective policy here: which file "
                                     "applies, mode, network, engines");
  args->policy.addTo(*sub);
  sub->add_flag("--json", args->json, "print one JSON object (the policy and features of doctor)");
  sub->callback([&ctx, args] {
    try {
      auto eff = loadEffectivePolicyOrReport(args->policy, "status");
      if (!eff) {
        ctx.exit_code = kUsageExitCode;
        return;
      }
      HostReport host = probeDoctorHost();
      auto rows = featureMatrix(host.caps, *eff->policy);
      if (args->json) {
        auto j = doctorJson(host, eff->summary, *eff->policy, rows);
        nlohmann::json out = {{"schema_version", j["schema_version"]},
                              {"policy", j["policy"]},
                              {"workspace", eff->policy->workspace},
                              {"features", j["features"]},
                              {"fully_enforceable", j["fully_enforceable"]}};
        std::printf("%s\n", out.dump(2).c_str());
      } else {
        std::fputs(statusText(eff->summary, *eff->policy, rows).c_str(), stdout);
      }
      ctx.exit_code = 0;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "supervise status: %s\n", e.what());
      ctx.exit_code = kUsageExitCode;
    }
  });
}

}  // namespace sv::supervisor
