// `supervise policy init [--preset P] [-o FILE] [--force]`
// `supervise policy learn AUDIT.jsonl [--policy F] [--preset P] [-o FILE]`
//
// init writes a starter policy file: the preset's own rules, each with the id
// and reason that explain it. JSON has no comments and the loader rejects
// unknown keys, so the rules' `reason` fields are the comments; the file is
// loaded back before it is written, so init never leaves an invalid policy.
//
// learn is audit2allow for supervise: every deny / would-deny decision of an
// audit file becomes the smallest addition that allows exactly it (the path,
// or ip:port; a profile for the binary when a base deny rule must be
// overridden: see smallestEdit() in commands.h). The additions are merged
// into the policy file in effect (or an empty one), and the result is loaded
// and every learned event decided again, so "learned" means "now allowed".
// Exit 0 when every event is allowed, 1 when some could not be, 2 on errors.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "policy/engine.h"
#include "policy/load.h"
#include "policy/presets.h"
#include "supervisor/cli/commands.h"
#include "supervisor/cli/policy_discovery.h"
#include "supervisor/cli/policy_args.h"

namespace sv::supervisor {
namespace {

using nlohmann::ordered_json;

constexpr int kExitOk = 0;
constexpr int kExitIncomplete = 1;
constexpr int kExitError = 2;

// A starting point for `--preset none`: nothing but the system paths, so
// the file spells out every root the command gets.
constexpr std::string_view kNoneStarter = R"json({
  "version": 1,
  "mode": "enforce",
  "fallback": "fail-closed",
  "filesystem": {
    "readableRoots": [],
    "writableRoots": [
      {"path": ".", "id": "workspace", "reason": "the workspace is the command's to edit"}
    ],
    "denyRead": [],
    "denyWrite": [
      {"path": ".env", "id": "deny-write-env", "reason": "secrets stay out of the agent's reach"}
    ]
  },
  "exec": {"allow": [], "deny": [], "switch": []},
  "network": {"mode": "localhost", "allow": []},
  "profiles": {}
}
)json";

int fail(const char* cmd, const std::string& message) {
  std::fprintf(stderr, "supervise policy %s: %s\n", cmd, message.c_str());
  return kExitError;
}

// Loads `text` as the policy file `name` on `preset` (and the other layers of
// `args`); errors and warnings go to stderr.
std::shared_ptr<const policy::Policy> loadText(PolicyArgs args, const std::string& name,
                                              const std::string& text, const char* cmd) {
  args.policy_file.clear();
  auto req = makeLoadRequest(args);
  if (!req) {
    fail(cmd, req.error().message());
    return nullptr;
  }
  req->files = {{name, text}};
  policy::LoadResult res = policy::load(*req);
  for (const auto& d : res.diagnostics) std::fprintf(stderr, "%s\n", d.format().c_str());
  return res.policy;
}

// Writes to FILE, or stdout for "-". Refuses to replace a file without force.
bool writeOutput(const std::string& file, const std::string& text, bool force, const char* cmd) {
  if (file == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return true;
  }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  int fd = ::open(file.c_str(), flags, 0644);
  if (fd < 0) {
    fail(cmd, "cannot write " + file + ": " + std::strerror(errno) +
                  (errno == EEXIST ? " (use --force to replace it)" : ""));
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok) fail(cmd, "write " + file + ": " + std::strerror(errno));
  return ok;
}

int runInit(const std::string& preset, const std::string& output, bool force) {
  std::string_view text;
  if (preset == "none") {
    text = kNoneStarter;
  } else if (auto t = policy::presetText(preset)) {
    text = *t;
  } else {
    return fail("init", "unknown preset \"" + preset + "\"");
  }
  // Re-serialised so the file has one stable layout (2-space indent) whatever
  // the embedded text looks like; ordered_json keeps the preset's key order.
  std::string out = ordered_json::parse(text).dump(2) + "\n";
  PolicyArgs args;
  args.preset = preset;
  if (!loadText(args, output == "-" ? "<stdout>" : output, out, "init")) {
    return fail("init", "the starter policy does not load (a bug: please report it)");
  }
  if (!writeOutput(output, out, force, "init")) return kExitError;
  if (output != "-") {
    std::fprintf(stderr,
                 "wrote %s: the rules of preset %s, each with its reason. Edit it, check it with "
                 "`supervise validate %s --preset %s`, see what applies with `supervise status`.\n",
                 output.c_str(), preset.c_str(), output.c_str(), preset.c_str());
    if (preset != "code-sandbox")
      std::fprintf(stderr,
                   "note: a policy file is layered on a preset; run with --preset %s (or "
                   "SUPERVISE_PRESET=%s) so the default code-sandbox is not underneath it.\n",
                   preset.c_str(), preset.c_str());
  }
  return kExitOk;
}

// The top-level keys in the order policy.md documents them (edits add keys
// in the order events arrive); unknown keys keep their place after those.
ordered_json inPolicyOrder(const ordered_json& doc) {
  ordered_json out = ordered_json::object();
  for (const char* k : {"version", "mode", "fallback", "filesystem", "exec", "network", "profiles",
                        "capabilities", "audit"})
    if (doc.contains(k)) out[k] = doc[k];
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!out.contains(it.key())) out[it.key()] = it.value();
  return out;
}

// Progress on a terminal: "learn: 41% (120000 lines)".
class Progress {
 public:
  Progress(const std::string& file) : tty_(::isatty(STDERR_FILENO) == 1) {
    struct stat st {};
    if (tty_ && file != "-" && ::stat(file.c_str(), &st) == 0) total_ = st.st_size;
  }
  void update(uint64_t lines, uint64_t bytes) {
    if (!tty_ || lines % 4096 != 0) return;
    if (total_ > 0)
      std::fprintf(stderr, "\rlearn: %3d%% (%llu lines)", static_cast<int>(bytes * 100 / total_),
                   static_cast<unsigned long long>(lines));
    else
      std::fprintf(stderr, "\rlearn: %llu lines", static_cast<unsigned long long>(lines));
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool tty_;
  bool shown_ = false;
  uint64_t total_ = 0;
};

int runLearn(const PolicyArgs& policy_args, const std::string& audit, const std::string& output,
             bool force) {
  std::ifstream file;
  if (audit != "-") {
    file.open(audit);
    if (!file) return fail("learn", "cannot read " + audit + ": " + std::strerror(errno));
  }
  std::istream& in = audit == "-" ? std::cin : file;

  std::vector<policy::Diagnostic> diags;
  auto eff = loadEffectivePolicy(policy_args, &diags);
  for (const auto& d : diags) std::fprintf(stderr, "%s\n", d.format().c_str());
  if (!eff) return diags.empty() ? fail("learn", eff.error().message()) : kExitError;
  policy::Engine engine(eff->policy);

  // The document the additions go into: the policy file in effect, so the
  // output replaces it; else a fresh file.
  ordered_json doc = ordered_json::object();
  if (!eff->summary.file.empty()) {
    auto text = readTextFile(eff->summary.file);
    if (!text) return fail("learn", text.error().message());
    doc = ordered_json::parse(*text, nullptr, false);
    if (doc.is_discarded()) return fail("learn", eff->summary.file + " is not JSON");
  } else {
    doc["version"] = 1;
  }

  std::vector<RecordedDecision> learned;
  std::map<std::string, int> skipped;  // why → count
  uint64_t lines = 0, bytes = 0, denied = 0;
  {
    Progress progress(audit);
    std::string line;
    while (std::getline(in, line)) {
      progress.update(++lines, bytes += line.size() + 1);
      if (line.find("deny\"") == std::string::npos) continue;  // cheap filter: (would-)deny
      std::string why;
      auto d = parseRecordedDecision(line, &why);
      if (!d) {
        if (why.starts_with("not a decision")) continue;
        ++skipped[why];
        continue;
      }
      if (d->decision != "deny" && d->decision != "would-deny") continue;
      ++denied;
      ordered_json edit = smallestEdit(engine, *d, &why);
      if (edit.is_null()) {
        ++skipped[d->target() + ": " + why];
        continue;
      }
      mergePolicyFragment(doc, edit);
      learned.push_back(std::move(*d));
    }
  }
  if (in.bad()) return fail("learn", "read " + audit + ": " + std::strerror(errno));

  // Load the result as a run would and decide every learned event again, in
  // the profile the process is in under the new policy.
  const std::string text = inPolicyOrder(doc).dump(2) + "\n";
  auto out_policy = loadText(policy_args, output == "-" ? "<learned>" : output, text, "learn");
  if (!out_policy) return fail("learn", "the learned policy does not load (a bug: please report it)");
  policy::Engine after(out_policy);
  std::vector<std::string> still;
  for (const auto& d : learned) {
    RecordedDecision again = d;
    if (!d.exe.empty()) again.profile = std::string(after.profileAfterExec(d.profile, d.exe));
    auto verdict = after.decide(again.request());
    if (verdict.verdict == policy::Verdict::Deny)
      still.push_back(d.target() + " (rule " + std::string(verdict.rule_id) + ")");
  }
  if (!writeOutput(output, text, force, "learn")) return kExitError;

  std::fprintf(stderr, "learn: %llu lines, %llu denied decisions, %zu learned%s\n",
               static_cast<unsigned long long>(lines), static_cast<unsigned long long>(denied),
               learned.size(),
               eff->summary.file.empty() ? "" : (" into a copy of " + eff->summary.file).c_str());
  for (const auto& [why, n] : skipped) std::fprintf(stderr, "  not learned (%dx): %s\n", n, why.c_str());
  for (const auto& s : still) std::fprintf(stderr, "  still denied: %s\n", s.c_str());
  if (output != "-" && !learned.empty()) {
    std::fprintf(stderr, "run with: supervise --policy %s%s -- COMMAND\n", output.c_str(),
                 eff->summary.preset == "code-sandbox" ? ""
                                                       : (" --preset " + eff->summary.preset).c_str());
  }
  return still.empty() && skipped.empty() ? kExitOk : kExitIncomplete;
}

}  // namespace

void registerPolicy(CLI::App& app, CommandContext& ctx) {
  CLI::App* policy = app.add_subcommand("policy", "write a starter policy, or learn one from an audit file");
  policy->require_subcommand(1);
  policy->footer(
      "Examples:\n"
      "  supervise policy init                       # writes ./.supervise.json\n"
      "  supervise policy learn audit.jsonl -o learned.json");

  struct InitArgs {
    std::string preset = "code-sandbox";
    std::string output = ".supervise.json";
    bool force = false;
  };
  auto init = std::make_shared<InitArgs>();
  CLI::App* init_cmd = policy->add_subcommand(
      "init", "write a starter policy: the preset's rules, each with its reason");
  init_cmd->add_option("--preset", init->preset, "code-sandbox (default), strict, audit-only, none")
      ->check(CLI::IsMember({"code-sandbox", "strict", "audit-only", "none"}));
  init_cmd->add_option("-o,--output", init->output,
                       "where to write it (default ./.supervise.json, which `supervise` discovers "
                       "in this directory; - for stdout)");
  init_cmd->add_flag("-f,--force", init->force, "replace an existing file");
  init_cmd->footer(
      "Examples:\n"
      "  supervise policy init\n"
      "  supervise policy init --preset strict -o strict.json");
  init_cmd->callback([&ctx, init] {
    ctx.exit_code = runGuarded("policy init", kExitError,
                               [&] { return runInit(init->preset, init->output, init->force); });
  });

  struct LearnArgs {
    PolicyArgs policy;
    std::string audit;
    std::string output = "-";
    bool force = false;
  };
  auto learn = std::make_shared<LearnArgs>();
  CLI::App* learn_cmd = policy->add_subcommand(
      "learn",
      "turn the deny and would-deny events of an audit file into the smallest policy that allows "
      "them (exit 0 all allowed, 1 some could not be)");
  learn_cmd->add_option("audit", learn->audit, "the audit file (JSON lines), - for stdin")->required();
  learn_cmd->add_option("-p,--policy", learn->policy.policy_file,
                        "the policy the audited run used (default: discovered like a run)");
  learn_cmd->add_option("--preset", learn->policy.preset, "the preset the audited run used");
  learn_cmd->add_option("--workspace", learn->policy.workspace,
                        "the workspace of the audited run (default: cwd)");
  learn_cmd->add_option("-o,--output", learn->output, "where to write the policy (default: stdout)");
  learn_cmd->add_flag("-f,--force", learn->force, "replace an existing output file");
  learn_cmd->footer(
      "Example:\n"
      "  supervise -o mode=audit --audit-file audit.jsonl -- npm test\n"
      "  supervise policy learn audit.jsonl -o learned.json\n"
      "  supervise --policy learned.json -- npm test");
  learn_cmd->callback([&ctx, learn] {
    ctx.exit_code = runGuarded("policy learn", kExitError, [&] {
      return runLearn(learn->policy, learn->audit, learn->output, learn->force);
    });
  });
}

}  // namespace sv::supervisor
