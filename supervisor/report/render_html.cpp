// renderHtml() (render.h): one self-contained page. No script and nothing
// fetched: inline CSS, the timeline as inline SVG. Every audit string goes
// through htmlEscape(); the only markup is written here.
#include <algorithm>
#include <cinttypes>
#include <ctime>

#include "supervisor/report/escape.h"
#include "supervisor/report/render.h"

namespace sv::report {
namespace {

std::string h(const std::string& s) { return htmlEscape(s); }
std::string n(uint64_t v) { return std::to_string(v); }

std::string utc(int64_t ms) {
  if (ms < 0) return "?";
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eee}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,monospace;background:#f0f0f0;padding:1px 3px;word-break:break-all}
.allow{color:#2e7d32}.deny{color:#c62828}.would{color:#ef6c00}
.tree div{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.rule{background:#fff;border:1px solid #ddd;padding:8px 12px;margin:12px 0}
.muted{color:#777}
)";

void timeline(const Report& r, std::string* out) {
  const auto& buckets = r.timeline();
  if (buckets.empty()) {
    *out += "<p class=muted>no timed decisions</p>\n";
    return;
  }
  constexpr size_t kColumns = 240;
  const size_t per = (buckets.size() + kColumns - 1) / kColumns;
  std::vector<Counts> cols((buckets.size() + per - 1) / per);
  uint64_t peak = 1;
  for (size_t i = 0; i < buckets.size(); ++i)
    for (int k = 0; k < kOutcomes; ++k) cols[i / per][k] += buckets[i].counts[k];
  for (const Counts& c : cols) peak = std::max<uint64_t>(peak, c[0] + c[1] + c[2]);
  const int width = 1200, height = 180, left = 50, bottom = 20;
  const double colw = static_cast<double>(width - left) / static_cast<double>(cols.size());
  char buf[256];
  *out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + n(width) + "\" height=\"" +
          n(height + bottom + 4) + "\" role=\"img\" aria-label=\"decisions over time\">\n";
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
                "<text x=\"0\" y=\"12\" font-size=\"11\">%" PRIu64 "</text>"
                "<text x=\"0\" y=\"%d\" font-size=\"11\">0</text>\n",
                left, height, width, height, peak, height);
  *out += buf;
  const char* colors[kOutcomes] = {"#66bb6a", "#e53935", "#fb8c00"};
  const char* names[kOutcomes] = {"allow", "deny", "would-deny"};
  const int64_t col_ms = r.bucketMs() * static_cast<int64_t>(per);
  for (size_t i = 0; i < cols.size(); ++i) {
    double y = height;
    for (int k = 0; k < kOutcomes; ++k) {
      if (!cols[i][k]) continue;
      const double hgt = static_cast<double>(cols[i][k]) * (height - 4) / static_cast<double>(peak);
      y -= hgt;
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">"
                    "<title>",
                    left + colw * static_cast<double>(i), y, std::max(colw - 0.5, 0.5), hgt,
                    colors[k]);
      *out += buf;
      *out += h(utc(r.timelineStartMs() + col_ms * static_cast<int64_t>(i))) + ": " +
              n(cols[i][k]) + " " + names[k] + "</title></rect>\n";
    }
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"11\">", left,
                height + bottom - 4);
  *out += buf + h(utc(r.timelineStartMs())) + "</text>";
  std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">",
                width, height + bottom - 4);
  *out += buf +
          h(utc(r.timelineStartMs() + col_ms * static_cast<int64_t>(cols.size()))) +
          "</text>\n</svg>\n";
  *out += "<p class=muted>" + n(cols.size()) + " column(s) of " + n(col_ms) +
          " ms; <span class=allow>&#9632; allow</span> <span class=deny>&#9632; deny</span> "
          "<span class=would>&#9632; would-deny</span></p>\n";
}

}  // namespace

std::string renderHtml(const Report& r, const RenderOptions& options) {
  std::string out;
  out.reserve(64 * 1024);
  const Counts& t = r.totals();
  std::string files;
  for (const std::string& f : options.files) files += (files.empty() ? "" : ", ") + f;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'; img-src data:\">\n<title>supervise report</title>\n<style>";
  out += kStyle;
  out += "</style></head><body>\n<h1>supervise report</h1>\n<p>" + h(files) + "</p>\n";
  out += "<table id=\"totals\"><tr><th>lines</th><th>sessions</th><th>decisions</th>"
         "<th class=allow>allow</th><th class=deny>deny</th><th class=would>would-deny</th>"
         "<th>malformed lines</th></tr><tr>";
  out += "<td class=n id=\"lines\">" + n(r.lines()) + "</td><td class=n id=\"sessions\">" +
         n(r.sessions().size() + r.sessionsOverflow().count()) + "</td><td class=n id=\"decisions\">" +
         n(t[kAllow] + t[kDeny] + t[kWouldDeny]) + "</td><td class=n id=\"allow\">" +
         n(t[kAllow]) + "</td><td class=n id=\"deny\">" + n(t[kDeny]) +
         "</td><td class=n id=\"would-deny\">" + n(t[kWouldDeny]) +
         "</td><td class=n id=\"malformed\">" + n(r.malformed()) + "</td></tr></table>\n";
  for (const std::string& m : r.malformedExamples())
    out += "<p class=muted>malformed: " + h(m) + "</p>\n";

  out += "<h2>Timeline</h2>\n";
  timeline(r, &out);

  out += "<h2>Decisions by category</h2>\n<table id=\"categories\"><tr><th>category</th>"
         "<th>allow</th><th>deny</th><th>would-deny</th></tr>\n";
  for (const auto& [category, c] : r.byCategory())
    out += "<tr><td>" + h(category) + "</td><td class=n>" + n(c[kAllow]) + "</td><td class=n>" +
           n(c[kDeny]) + "</td><td class=n>" + n(c[kWouldDeny]) + "</td></tr>\n";
  out += "</table>\n";

  out += "<h2>Sessions</h2>\n<table id=\"session-list\"><tr><th>session</th><th>command</th>"
         "<th>start</th><th>end</th><th>exit</th><th>format</th><th>allow</th><th>deny</th>"
         "<th>would-deny</th></tr>\n";
  for (const SessionSummary& s : r.sessions())
    out += "<tr><td><code>" + h(s.id) + "</code></td><td><code>" + h(s.command) +
           "</code></td><td>" + h(s.start) + "</td><td>" + h(s.end) + "</td><td>" +
           h(s.exitText()) + "</td><td>" + h(s.format) + "</td><td class=n>" +
           n(s.decisions[kAllow]) + "</td><td class=n>" + n(s.decisions[kDeny]) +
           "</td><td class=n>" + n(s.decisions[kWouldDeny]) + "</td></tr>\n";
  out += "</table>\n";
  if (r.sessionsOverflow().count())
    out += "<p class=muted>" + n(r.sessionsOverflow().count()) + " more session(s) not listed</p>\n";

  out += "<h2>Denials by rule</h2>\n";
  const auto rules = r.rulesByDenials();
  if (rules.empty()) out += "<p class=muted>no denials</p>\n";
  for (const RuleSummary* rule : rules) {
    out += "<div class=rule><b><code>" + h(rule->id) + "</code></b> &mdash; <span class=deny>" +
           n(rule->deny) + " deny</span>";
    if (rule->would_deny) out += ", <span class=would>" + n(rule->would_deny) + " would-deny</span>";
    if (!rule->reason.empty()) out += "<br>" + h(rule->reason);
    out += "<table><tr><th>event</th><th>process</th><th>target</th><th>explain</th></tr>\n";
    for (const DenialRef& d : rule->denials)
      out += "<tr><td><code>" + h(d.event_id) + "</code>" + (d.would ? " (would)" : "") +
             "</td><td>" + h(d.comm) + "</td><td><code>" + h(d.target) + "</code></td><td><code>" +
             h(explainCommand(d.source, d.session_id, d.seq)) + "</code></td></tr>\n";
    out += "</table>";
    const uint64_t shown = rule->denials.size();
    if (rule->deny + rule->would_deny > shown)
      out += "<p class=muted>" + n(rule->deny + rule->would_deny - shown) +
             " more, the first " + n(shown) + " shown; other targets: ";
    if (rule->deny + rule->would_deny > shown) {
      std::string list;
      for (const std::string& e : rule->examples) list += (list.empty() ? "" : ", ") + h(e);
      out += "<code>" + list + "</code></p>";
    }
    out += "</div>\n";
  }
  if (r.rulesOverflow().count())
    out += "<p class=muted>" + n(r.rulesOverflow().count()) + " more rule(s) past the cap</p>\n";

  out += "<h2>Process tree</h2>\n<div class=tree>\n";
  for (const SessionSummary& s : r.sessions()) {
    size_t total = 0;
    auto tree = processTree(r, s.id, options.tree_lines * 5, &total);
    if (tree.empty()) continue;
    out += "<h3>session <code>" + h(s.id) + "</code></h3>\n";
    for (const TreeLine& line : tree) {
      const ProcessSummary& p = *line.process;
      out += "<div style=\"padding-left:" + n(static_cast<uint64_t>(line.depth) * 18) + "px\">" +
             n(static_cast<uint64_t>(p.pid)) + " " + h(p.command.empty() ? p.comm : p.command);
      if (p.denials) {
        out += " <span class=deny>[" + n(p.denials) + " denied:";
        for (const auto& [rule, count] : p.denied_rules) out += " " + h(rule) + " &times;" + n(count);
        if (p.other_denials) out += " +" + n(p.other_denials);
        out += "]</span>";
      }
      out += "</div>\n";
    }
    if (total > tree.size())
      out += "<div class=muted>&hellip; " + n(total - tree.size()) + " more process(es)</div>\n";
  }
  out += "</div>\n";
  if (r.processesOverflow().count())
    out += "<p class=muted>" + n(r.processesOverflow().count()) +
           " process(es) not tracked (cap " + n(r.limits().processes) + ")</p>\n";
  out += "</body></html>\n";
  return out;
}

}  // namespace sv::report
