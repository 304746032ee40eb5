// processTree() (render.h): the tracked processes of a session as a forest.
#include <algorithm>
#include <map>
#include <set>

#include "supervisor/report/render.h"

namespace sv::report {

std::vector<TreeLine> processTree(const Report& report, const std::string& session_id,
                                  size_t max, size_t* total) {
  std::map<int64_t, const ProcessSummary*> by_pid;
  for (const ProcessSummary& p : report.processes())
    if (p.session_id == session_id) by_pid.emplace(p.pid, &p);
  *total = by_pid.size();
  std::map<int64_t, std::vector<const ProcessSummary*>> children;
  std::vector<const ProcessSummary*> roots;
  for (const auto& [pid, p] : by_pid) {
    if (p->ppid >= 0 && p->ppid != pid && by_pid.count(p->ppid))
      children[p->ppid].push_back(p);
    else
      roots.push_back(p);
  }
  std::vector<TreeLine> out;
  std::set<int64_t> visited;  // a hostile file can make ppid cycles
  std::vector<TreeLine> stack;
  auto push_all = [&](const std::vector<const ProcessSummary*>& list, int depth) {
    for (auto it = list.rbegin(); it != list.rend(); ++it) stack.push_back({depth, *it});
  };
  push_all(roots, 0);
  // Processes on a cycle have a tracked parent and are nobody's descendant
  // from a root: they are shown as roots after the others.
  for (size_t pass = 0; pass < 2; ++pass) {
    while (!stack.empty() && out.size() < max) {
      TreeLine line = stack.back();
      stack.pop_back();
      if (!visited.insert(line.process->pid).second) continue;
      out.push_back(line);
      auto c = children.find(line.process->pid);
      if (c != children.end()) push_all(c->second, std::min(line.depth + 1, 32));
    }
    if (pass == 0)
      for (const auto& [pid, p] : by_pid)
        if (!visited.count(pid)) stack.insert(stack.begin(), TreeLine{0, p});
  }
  return out;
}

}  // namespace sv::report
