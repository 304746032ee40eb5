// `supervise doctor [--json] [policy flags]`
//
// Prints the capability matrix of this host (every probe a real attempt) and,
// for the effective policy (discovery as for the run command; the default
// preset is code-sandbox), which backend enforces each feature here. Exit 0
// when that policy is fully enforceable, 1 when not, 2 for a bad policy or
// usage, so provisioning scripts can gate on it.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "supervisor/cli/commands.h"
#include "supervisor/cli/doctor_report.h"
#include "supervisor/cli/policy_args.h"

namespace sv::supervisor {

void registerDoctor(CLI::App &app, CommandContext &ctx) {
  struct Args {
    PolicyArgs policy;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App *sub =
      app.add_subcommand("doctor",
                         "show what this host can enforce, and for the effective policy "
                         "which mechanism enforces "
                         "each feature (exit 0 fully enforceable, 1 not)");
  args->policy.addTo(*sub);
  sub->add_flag("--json", args->json, "print one JSON object instead of the table");
  sub->callback([&ctx, args] {
    try {
      auto eff = loadEffectivePolicyOrReport(args->policy, "doctor");
      if (!eff) {
        ctx.exit_code = kUsageExitCode;
        return;
      }
      HostReport host = probeDoctorHost();
      auto rows = featureMatrix(host.caps, *eff->policy);
      if (args->json) {
        std::printf("%s\n", doctorJson(host, eff->summary, *eff->policy, rows).dump(2).c_str());
      } else {
        std::fputs(doctorText(host, eff->summary, *eff->policy, rows).c_str(), stdout);
      }
      ctx.exit_code = fullyEnforceable(rows) ? 0 : 1;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "supervise doctor: %s\n", e.what());
      ctx.exit_code = kUsageExitCode;
    }
  });
}

}  // namespace sv::supervisor
