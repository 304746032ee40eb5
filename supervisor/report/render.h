// The two views of a Report: a terminal summary and a self-contained HTML
// page (inline CSS and SVG, no script, no fetch). Both escape every string
// that came from an audit file (escape.h).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "supervisor/report/aggregate.h"

namespace sv::report {

struct RenderOptions {
  std::vector<std::string> files;  // the audit files, as given
  size_t top_rules = 10;           // terminal: rules listed
  size_t tree_lines = 200;         // processes shown per session
};

std::string renderText(const Report& report, const RenderOptions& options);
std::string renderHtml(const Report& report, const RenderOptions& options);

// The process tree of one session, depth first: (depth, process) in order,
// at most `max` entries. Parents are the tracked process whose pid is the
// ppid; a process whose parent is not tracked is a root. Shared by both views.
struct TreeLine {
  int depth;
  const ProcessSummary* process;
};
std::vector<TreeLine> processTree(const Report& report, const std::string& session_id,
                                  size_t max, size_t* total);

}  // namespace sv::report
