// renderText() (render.h): the terminal summary of `supervise report`.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "supervisor/report/escape.h"
#include "supervisor/report/render.h"

namespace sv::report {
namespace {

void appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out->append(buf, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  *out += big;
}

std::string safe(const std::string& s) { return terminalSafe(s); }

}  // namespace

std::string renderText(const Report& r, const RenderOptions& options) {
  std::string out;
  const Counts& t = r.totals();
  appendf(&out, "report: %" PRIu64 " line(s), %zu session(s), %" PRIu64 " decision(s): %" PRIu64
                " allow, %" PRIu64 " deny, %" PRIu64 " would-deny\n",
          r.lines(), r.sessions().size() + r.sessionsOverflow().count(), t[kAllow] + t[kDeny] + t[kWouldDeny],
          t[kAllow], t[kDeny], t[kWouldDeny]);
  if (r.malformed()) {
    appendf(&out, "malformed: %" PRIu64 " line(s) skipped\n", r.malformed());
    for (const std::string& m : r.malformedExamples()) appendf(&out, "  %s\n", safe(m).c_str());
  }

  out += "\nsessions:\n";
  for (const SessionSummary& s : r.sessions()) {
    appendf(&out, "  %s  %s\n", safe(s.id).c_str(),
            s.command.empty() ? "(no start record)" : safe(s.command).c_str());
    appendf(&out, "    %s .. %s  exit %s  (%s)  %" PRIu64 " allow, %" PRIu64 " deny, %" PRIu64
                  " would-deny\n",
            s.start.empty() ? "?" : safe(s.start).c_str(), s.end.empty() ? "?" : safe(s.end).c_str(),
            safe(s.exitText()).c_str(), safe(s.format).c_str(), s.decisions[kAllow],
            s.decisions[kDeny], s.decisions[kWouldDeny]);
  }
  if (r.sessionsOverflow().count())
    appendf(&out, "  ... %s%" PRIu64 " more session(s) not listed (cap %zu)\n",
            r.sessionsOverflow().exact() ? "" : "up to ", r.sessionsOverflow().count(),
            r.limits().sessions);

  appendf(&out, "\ndecisions by category:\n  %-10s %10s %10s %10s\n", "category", "allow", "deny",
          "would-deny");
  for (const auto& [category, c] : r.byCategory())
    appendf(&out, "  %-10s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n", safe(category).c_str(),
            c[kAllow], c[kDeny], c[kWouldDeny]);

  const auto rules = r.rulesByDenials();
  out += "\ntop denied rules:\n";
  if (rules.empty()) out += "  (none)\n";
  for (size_t i = 0; i < rules.size() && i < options.top_rules; ++i) {
    const RuleSummary& rule = *rules[i];
    appendf(&out, "  %6" PRIu64 "  %s", rule.deny + rule.would_deny, safe(rule.id).c_str());
    if (rule.would_deny) appendf(&out, " (%" PRIu64 " would-deny)", rule.would_deny);
    if (!rule.reason.empty()) appendf(&out, ": %s", safe(rule.reason).c_str());
    out += "\n";
    for (const std::string& e : rule.examples) appendf(&out, "          %s\n", safe(e).c_str());
    if (rule.more_targets) appendf(&out, "          ... %" PRIu64 " more\n", rule.more_targets);
    if (!rule.denials.empty()) {
      const DenialRef& d = rule.denials.front();
      appendf(&out, "          why: %s\n",
              safe(explainCommand(d.source, d.session_id, d.seq)).c_str());
    }
  }
  if (rules.size() > options.top_rules)
    appendf(&out, "  ... %zu more rule(s)\n", rules.size() - options.top_rules);
  if (r.rulesOverflow().count())
    appendf(&out, "  ... %" PRIu64 " more rule(s) past the cap of %zu, not counted above\n",
            r.rulesOverflow().count(), r.limits().rules);

  out += "\nprocess tree:\n";
  for (const SessionSummary& s : r.sessions()) {
    size_t total = 0;
    auto tree = processTree(r, s.id, options.tree_lines, &total);
    if (tree.empty()) continue;
    appendf(&out, "  session %s\n", safe(s.id).c_str());
    for (const TreeLine& line : tree) {
      const ProcessSummary& p = *line.process;
      appendf(&out, "  %*s%" PRId64 " %s", 2 + 2 * line.depth, "", p.pid,
              safe(p.command.empty() ? p.comm : p.command).c_str());
      if (p.denials) {
        appendf(&out, "  [%" PRIu64 " denied:", p.denials);
        for (const auto& [rule, n] : p.denied_rules)
          appendf(&out, " %s x%" PRIu64, safe(rule).c_str(), n);
        if (p.other_denials) appendf(&out, " +%" PRIu64 " other", p.other_denials);
        out += "]";
      }
      out += "\n";
    }
    if (total > tree.size()) appendf(&out, "    ... %zu more process(es)\n", total - tree.size());
  }
  if (r.processesOverflow().count())
    appendf(&out, "  ... %s%" PRIu64 " process(es) not tracked (cap %zu), %" PRIu64
                  " of their decisions counted above\n",
            r.processesOverflow().exact() ? "" : "up to ", r.processesOverflow().count(),
            r.limits().processes, r.untrackedDecisions());
  return out;
}

}  // namespace sv::report
