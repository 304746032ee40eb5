// validatePolicy(): the checks that need the whole layered policy (see
// validate.h).
#include "policy/validate.h"

#include <algorithm>
#include <set>

#include "policy/path.h"
#include "policy/presets.h"

namespace sv::policy {
namespace {

std::string where(const Origin& o) {
  if (o.line == 0) return o.file;
  return o.file + ":" + std::to_string(o.line) + ":" + std::to_string(o.column);
}

bool fromPreset(const Origin& o) { return o.file.starts_with("preset:"); }

// Two globs can touch the same path when one literal prefix lies under the other.
bool overlaps(const Glob& a, const Glob& b) {
  return isUnder(a.literalPrefix(), b.literalPrefix()) || isUnder(b.literalPrefix(), a.literalPrefix());
}

}  // namespace

std::shared_ptr<Policy> validatePolicy(Policy policy, const LoadRequest& req,
                                       std::vector<Diagnostic>* diags) {
  Policy& p = policy;
  auto errorAtOrigin = [diags](const Origin& o, std::string msg, bool warning = false) {
    diags->push_back({o.file, o.line, o.column, std::move(msg), warning});
  };
  p.workspace = req.workspace;
  p.home = req.home;
  if (!p.network.mode) p.network.mode = NetworkMode::Localhost;
  for (auto path : systemReadPaths()) {
    PathRule r;
    r.id = "system-read:" + std::string(path);
    r.reason = "system path every program needs to start";
    r.pattern = std::string(path);
    r.name = "system read path " + r.pattern;
    Glob::compile(path, &r.glob, nullptr, nullptr, true);
    r.origin = {"builtin", 0, 0};
    p.system_read.push_back(std::move(r));
  }
  for (auto path : systemWritePaths()) {
    PathRule r;
    r.id = "system-write:" + std::string(path);
    r.reason = "device every program may write";
    r.pattern = std::string(path);
    r.name = "system write path " + r.pattern;
    Glob::compile(path, &r.glob, nullptr, nullptr, true);
    r.origin = {"builtin", 0, 0};
    p.system_write.push_back(std::move(r));
  }

  // exec.switch → known profiles.
  auto checkSwitches = [&](const ExecRules& ex) {
    for (const auto& s : ex.switches) {
      if (!p.profiles.count(s.profile)) {
        std::string known;
        for (const auto& [name, _] : p.profiles) known += (known.empty() ? "" : ", ") + name;
        errorAtOrigin(s.origin, "exec.switch refers to unknown profile \"" + s.profile + "\"" +
                                    (known.empty() ? " (no profiles defined)"
                                                   : " (known: " + known + ")"));
      }
    }
  };
  checkSwitches(p.exec);
  for (const auto& [_, prof] : p.profiles) checkSwitches(prof.exec);

  // Duplicate ids. The same rule listed by two layers (a policy file that
  // repeats a preset entry, or two files listing one path) is harmless; two
  // different rules under one id make the audit log ambiguous.
  struct IdUse {
    std::string_view id;
    const Origin* origin;
    std::string key;  // section + resolved pattern: what the rule does
  };
  std::vector<IdUse> ids;
  auto collectFs = [&](const FilesystemRules& fs, const std::string& pre) {
    for (auto* list : {&fs.readable_roots, &fs.writable_roots, &fs.deny_read, &fs.deny_write}) {
      const char* sec = list == &fs.readable_roots   ? "readableRoots"
                        : list == &fs.writable_roots ? "writableRoots"
                        : list == &fs.deny_read      ? "denyRead"
                                                     : "denyWrite";
      for (const auto& r : *list) ids.push_back({r.id, &r.origin, pre + sec + "|" + r.glob.pattern()});
    }
  };
  auto collectExec = [&](const ExecRules& ex, const std::string& pre) {
    for (const auto& r : ex.allow) ids.push_back({r.id, &r.origin, pre + "exec.allow|" + r.glob.pattern()});
    for (const auto& r : ex.deny) ids.push_back({r.id, &r.origin, pre + "exec.deny|" + r.glob.pattern()});
    for (const auto& r : ex.switches)
      ids.push_back({r.id, &r.origin, pre + "exec.switch|" + r.glob.pattern() + "|" + r.profile});
  };
  auto collectNet = [&](const NetworkRules& n, const std::string& pre) {
    for (const auto& r : n.allow) ids.push_back({r.id, &r.origin, pre + "network.allow|" + r.spec});
  };
  collectFs(p.filesystem, "");
  collectExec(p.exec, "");
  collectNet(p.network, "");
  for (auto* list : {&p.environment.allow, &p.environment.deny})
    for (const auto& r : *list)
      ids.push_back({r.id, &r.origin,
                     std::string(list == &p.environment.allow ? "environment.allow|"
                                                              : "environment.deny|") +
                         r.pattern});
  for (const auto& [name, prof] : p.profiles) {
    std::string pre = "profiles." + name + ".";
    collectFs(prof.filesystem, pre);
    collectExec(prof.exec, pre);
    collectNet(prof.network, pre);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (ids[i].id != ids[j].id) continue;
      // A derived secret is one id on its denyRead and its denyWrite rule.
      if (ids[i].origin->derived() && ids[j].origin->derived()) break;
      if (ids[i].key == ids[j].key) {
        if (ids[i].origin->file == ids[j].origin->file) {
          errorAtOrigin(*ids[i].origin, "duplicate entry (same as " + where(*ids[j].origin) + ")",
                        true);
        }
      } else {
        errorAtOrigin(*ids[i].origin, "duplicate rule id \"" + std::string(ids[i].id) +
                                          "\" (first used at " + where(*ids[j].origin) + ")");
      }
      break;
    }
  }

  // Contradictions: the same path allowed and denied. Within one file that is
  // a mistake; across layers it is how a file narrows a preset, so only warn.
  auto contradict = [&](const std::vector<PathRule>& allow, const std::vector<PathRule>& deny,
                        const char* what) {
    for (const auto& d : deny) {
      for (const auto& a : allow) {
        if (a.glob.pattern() != d.glob.pattern()) continue;
        bool same_file = a.origin.file == d.origin.file;
        errorAtOrigin(d.origin,
                      std::string(what) + " \"" + d.pattern + "\" denies exactly what \"" +
                          a.pattern + "\" (" + where(a.origin) + ") allows; the deny wins",
                      !same_file);
      }
    }
  };
  auto contradictions = [&](const FilesystemRules& fs, const ExecRules& ex) {
    contradict(fs.writable_roots, fs.deny_write, "denyWrite");
    contradict(fs.readable_roots, fs.deny_read, "denyRead");
    contradict(fs.writable_roots, fs.deny_read, "denyRead");
    contradict(ex.allow, ex.deny, "exec.deny");
  };
  contradictions(p.filesystem, p.exec);
  for (const auto& [_, prof] : p.profiles) contradictions(prof.filesystem, prof.exec);

  // Rules that can never fire.
  auto netNeverFires = [&](const NetworkRules& n, NetworkMode mode) {
    if (mode != NetworkMode::None && mode != NetworkMode::All) return;
    for (const auto& r : n.allow) {
      if (fromPreset(r.origin)) continue;
      errorAtOrigin(r.origin,
                    std::string("network.allow entry never fires: network.mode is ") +
                        (mode == NetworkMode::None ? "\"none\"" : "\"all\""),
                    true);
    }
  };
  netNeverFires(p.network, *p.network.mode);
  for (const auto& [_, prof] : p.profiles) {
    netNeverFires(prof.network, prof.network.mode.value_or(*p.network.mode));
  }
  auto denyNeverFires = [&](const std::vector<PathRule>& deny, const char* what, bool write) {
    for (const auto& d : deny) {
      // A derived rule is not the user's text: nothing in it to point at, and
      // a secret outside every root is the expected case (it names the denial).
      if (fromPreset(d.origin) || d.origin.derived()) continue;
      bool reachable = false;
      auto check = [&](const std::vector<PathRule>& roots) {
        for (const auto& r : roots) reachable = reachable || overlaps(r.glob, d.glob);
      };
      check(p.filesystem.writable_roots);
      check(p.system_write);
      if (!write) {
        check(p.filesystem.readable_roots);
        check(p.system_read);
      }
      for (const auto& [_, prof] : p.profiles) {
        check(prof.filesystem.writable_roots);
        if (!write) check(prof.filesystem.readable_roots);
      }
      if (!reachable) {
        errorAtOrigin(d.origin,
                      std::string(what) + " \"" + d.pattern + "\" never fires: it is outside every " +
                          (write ? "writable" : "readable") + " root",
                      true);
      }
    }
  };
  denyNeverFires(p.filesystem.deny_write, "denyWrite", true);
  denyNeverFires(p.filesystem.deny_read, "denyRead", false);
  if (p.name.empty()) p.name = "preset:" + req.preset;
  return std::make_shared<Policy>(std::move(p));
}

}  // namespace sv::policy
