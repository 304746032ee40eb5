// The subcommands of `supervise`, each registered on the CLI11 app by its
// own file. A command's callback stores its exit status in the context.
#pragma once

namespace CLI {
class App;
}

namespace sv::supervisor {

struct CommandContext {
  int exit_code = 0;
};

// Usage errors (unknown flag, missing argument) of supervise itself.
inline constexpr int kUsageExitCode = 2;

void registerRun(CLI::App& app, CommandContext& ctx);       // cmd_run.cpp
void registerValidate(CLI::App& app, CommandContext& ctx);  // cmd_validate.cpp
void registerExplain(CLI::App& app, CommandContext& ctx);   // cmd_explain.cpp
void registerDoctor(CLI::App& app, CommandContext& ctx);    // cmd_doctor.cpp
void registerStatus(CLI::App& app, CommandContext& ctx);    // cmd_status.cpp

}  // namespace sv::supervisor
