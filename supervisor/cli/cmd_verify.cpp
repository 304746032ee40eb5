// `supervise verify AUDIT.jsonl...`: checks the hash chain of file sinks
// written with `audit.chain: true` (docs/audit-events.md, "Hash chain").
//
// Every line of a chained session carries "chain" (natively a top-level
// member, OCSF `unmapped.chain`, ECS `supervise.chain`): the sha256 of the
// previous line of that session in that sink, the first line's of its session
// id (chainSeed()). Sessions interleave in one file and each chain is
// followed on its own; rotated files are given oldest first and read as one
// stream. The first line where a chain breaks is reported, with what it
// means: an edited line breaks the chain at the next line of its session, a
// removed line at the line after it, an inserted line at itself. Exit 0 when
// every chained session is intact, 1 at the first break (or when nothing in
// the files is chained), 2 for usage and unreadable files.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervisor/audit/audit_log.h"
#include "supervisor/audit/sha256.h"
#include "supervisor/cli/commands.h"

namespace sv::supervisor {
namespace {

struct ChainState {
  std::string prev;  // sha256 hex of the session's last line so far
  std::string where;  // FILE:LINE of that line
  uint64_t lines = 0;
  bool ended = false;  // its session end record was seen
};

const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string stringAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return "";
    cur = member(*cur, k);
    if (!cur) return "";
  }
  return cur->is_string() ? cur->get<std::string>() : "";
}

// Session id and chain of a line in any of the three formats.
void sessionAndChain(const nlohmann::json& j, std::string* session, std::string* chain,
                     bool* end) {
  if (auto s = stringAt(j, {"session_id"}); !s.empty()) {  // native
    *session = s;
    *chain = stringAt(j, {"chain"});
    *end = stringAt(j, {"category"}) == "session" && stringAt(j, {"operation"}) == "end";
  } else if (auto o = stringAt(j, {"metadata", "correlation_uid"}); !o.empty()) {  // OCSF
    *session = o;
    *chain = stringAt(j, {"unmapped", "chain"});
    *end = stringAt(j, {"unmapped", "category"}) == "session" &&
           stringAt(j, {"unmapped", "operation"}) == "end";
  } else {  // ECS
    *session = stringAt(j, {"labels", "session_id"});
    *chain = stringAt(j, {"supervise", "chain"});
    *end = stringAt(j, {"event", "action"}) == "session-end";
  }
}

int runVerify(const std::vector<std::string>& files, bool quiet) {
  std::map<std::string, ChainState> sessions;
  uint64_t total = 0, unchained = 0;
  auto broken = [](const std::string& where, const std::string& what) {
    std::printf("%s: chain broken: %s\n", where.c_str(), what.c_str());
    return 1;
  };
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "supervise verify: cannot read %s\n", file.c_str());
      return kUsageExitCode;
    }
    std::string line;
    uint64_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      const std::string where = file + ":" + std::to_string(n);
      if (line.empty()) return broken(where, "empty line (inserted, or a line cut)");
      ++total;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object())
        return broken(where, "not a JSON object (edited, cut, or inserted)");
      std::string session, chain;
      bool end = false;
      sessionAndChain(j, &session, &chain, &end);
      auto it = sessions.find(session);
      if (chain.empty()) {
        if (it != sessions.end())
          return broken(where, "a line without \"chain\" inside chained session " + session +
                                   " (inserted)");
        ++unchained;
        continue;
      }
      if (session.empty()) return broken(where, "a chained line without a session id (edited)");
      const bool first = it == sessions.end();
      const std::string expected = first ? chainSeed(session) : it->second.prev;
      if (chain != expected) {
        if (first)
          return broken(where, "the first line of session " + session +
                                   " here does not chain to the session's start: lines before "
                                   "it were removed, this line was inserted or edited, or the "
                                   "earlier lines are in a rotated file not given (give rotated "
                                   "files oldest first)");
        if (it->second.ended)
          return broken(where, "a line of session " + session + " after its end record " +
                                   it->second.where + " (inserted)");
        return broken(where, "does not chain to the previous line of session " + session + " (" +
                                 it->second.where +
                                 "): that line was edited, a line between them was removed, or "
                                 "this one was inserted");
      }
      ChainState& st = sessions[session];
      if (st.ended)
        return broken(where, "a line of session " + session + " after its end record " +
                                 st.where + " (inserted)");
      st.prev = sha256Hex(line);
      st.where = where;
      ++st.lines;
      st.ended = end;
    }
  }
  if (sessions.empty()) {
    std::printf("nothing to verify: none of %llu line(s) carries a chain (audit.chain is off?)\n",
                static_cast<unsigned long long>(total));
    return 1;
  }
  if (!quiet) {
    for (const auto& [id, st] : sessions) {
      std::printf("session %s: %llu line(s) intact, last %s%s\n", id.c_str(),
                  static_cast<unsigned long long>(st.lines), st.where.c_str(),
                  st.ended ? "" : " (no end record: still running, killed, or its last lines "
                                  "removed)");
      std::printf("  last line sha256 %s\n", st.prev.c_str());
    }
    if (unchained)
      std::printf("%llu line(s) of unchained sessions not checked\n",
                  static_cast<unsigned long long>(unchained));
  }
  std::printf("intact\n");
  return 0;
}

}  // namespace

void registerVerify(CLI::App& app, CommandContext& ctx) {
  struct Args {
    std::vector<std::string> files;
    bool quiet = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand(
      "verify",
      "check the hash chain of audit files written with audit.chain: true; reports the first "
      "line where it breaks (exit 0 intact, 1 broken)");
  sub->add_option("files", args->files,
                  "audit files (JSON lines); rotated ones oldest first: FILE.2 FILE.1 FILE")
      ->required();
  sub->add_flag("-q,--quiet", args->quiet, "print only the verdict (or the break)");
  sub->footer(
      "Examples:\n"
      "  supervise verify audit.jsonl\n"
      "  supervise verify audit.jsonl.2 audit.jsonl.1 audit.jsonl");
  sub->callback([&ctx, args] {
    ctx.exit_code =
        runGuarded("verify", kUsageExitCode, [&] { return runVerify(args->files, args->quiet); });
  });
}

}  // namespace sv::supervisor
