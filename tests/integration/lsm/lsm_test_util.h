// Shared by the BPF-LSM integration tests: whether the BPF LSM must be
// there (SV_REQUIRE_BPF_LSM=1, set by tools/vm/run), the probe's verdict
// (once per binary: a load costs seconds in a TCG guest), and a scratch
// directory outside every root of the presets.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tracer/bpf/lsm_filter.h"

namespace sv::lsm_test {

inline bool requireLsm() {
  const char* v = std::getenv("SV_REQUIRE_BPF_LSM");
  return v && std::string(v) == "1";
}

// {usable, detail} of tracer::probeBpfLsm().
inline const std::pair<bool, std::string>& lsmProbe() {
  static const std::pair<bool, std::string> probe = [] {
    std::string detail;
    auto usable = tracer::probeBpfLsm(&detail);
    if (!usable.ok()) return std::make_pair(false, usable.error().message());
    return std::make_pair(*usable, detail);
  }();
  return probe;
}

// Why LsmFilter leaves a path_* hook unloaded on this kernel, or "" when it
// loads them all (tracer::probeLsmHooks asks what LsmFilter::load asks):
// without the bpf_path_d_path kfunc (6.12+) path_mknod stays out, and where
// bpf_d_path is refused in the path_* hooks (6.1) they all do. A session
// then keeps the write routes on user-notify (lsmSeccompPlan): their
// denials are enforced_by seccomp, and the filter alone cannot judge them.
inline const std::string& missingPathHooks() {
  static const std::string why = [] {
    std::vector<tracer::LsmHookMissing> missing;
    auto hooks = tracer::probeLsmHooks(&missing);
    if (!hooks) return hooks.error().message();
    return tracer::hasEveryLsmPathHook(*hooks) ? std::string()
                                               : tracer::describeMissingPathHooks(missing);
  }();
  return why;
}

// A fresh directory `<base>/<prefix>-XXXXXX`, "" on failure. Not under /tmp
// (the presets make it writable): base is SV_SCRATCH_DIR (tools/vm/run's
// guest tmpfs), else /srv.
inline std::string makeScratchDir(const std::string& prefix) {
  const char* scratch = std::getenv("SV_SCRATCH_DIR");
  const std::string base = scratch && *scratch ? scratch : "/srv";
  std::filesystem::create_directories(base);
  std::string tmpl = base + "/" + prefix + "-XXXXXX";
  return mkdtemp(tmpl.data()) ? tmpl : std::string();
}

}  // namespace sv::lsm_test
