// The mount-namespace floor: where Landlock is missing, the roots of the
// compiled Landlock plan are enforced by a private mount namespace instead.
//
// The command's root becomes a read-only tmpfs holding only the plan's paths,
// each bound from the host with the plan's rights as mount attributes: no
// write → read-only, no exec → noexec (nosuid everywhere, nodev outside /dev).
// Whatever no rule names is absent, as Landlock leaves it unreadable. Paths
// that match a deny-write rule and exist at launch are bound read-only on top
// (EROFS even where a raced decision would let a write through). The plan is
// made in the parent (path lookups, allocation); applyMountFloor() runs in
// the forked child and uses raw syscalls only.
//
// What the floor cannot express and user-notify still decides: deny globs on
// names created later, device nodes (a read-only mount does not stop writes
// to /dev/urandom), exec allow-lists narrower than a directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "policy/compile.h"
#include "policy/model.h"
#include "tracer/protected_names.h"

namespace sv::tracer {

struct MountFloorStep {
  enum class Kind { MakeDir, MakeFile, Bind };
  Kind kind = Kind::MakeDir;
  std::string source;        // Bind: the host path
  std::string target;        // inside the staging root
  uint64_t attr_set = 0;     // Bind: MOUNT_ATTR_* set on the bound tree (recursively)
  uint64_t attr_clr = 0;     //       and cleared
  bool operator==(const MountFloorStep&) const = default;
};

struct MountFloorPlan {
  std::string staging;  // an empty directory: the tmpfs that becomes the root
  std::vector<MountFloorStep> steps;
  std::string cwd;                           // entered after the pivot
  std::vector<std::string> read_only_names;  // protected names bound read-only
  bool names_truncated = false;              // the walk for them hit its cap
};

// Whether this host can give a session the floor: a private mount namespace
// needs CAP_SYS_ADMIN, and mount_setattr (5.12) for recursive attributes.
// SUPERVISE_TEST_DISABLE=mountns says no. On no, `why` says why.
bool mountFloorAvailable(std::string* why = nullptr);

// The floor for `plan` (its rules; plan.paths must be true) with `protect`
// (deny-write rules: their existing matches below writable rules get bound
// read-only, found by a walk bounded to kMaxWalkEntries). `staging`: an
// empty directory, `cwd`: the command's working directory, which must lie
// below some rule.
Result<MountFloorPlan> planMountFloor(const policy::LandlockPlan& plan,
                                      const std::vector<policy::PathRule>& protect,
                                      const std::string& staging, const std::string& cwd,
                                      size_t walk_budget = kMaxWalkEntries);

// In the child: unshares the mount namespace, builds the plan's root and
// pivots into it. Raw syscalls only. Returns 0, or -errno with *failed set
// to a static description of the step.
int applyMountFloor(const MountFloorPlan& plan, const char** failed);

// An empty directory for the staging root, outside every rule of `plan`,
// removed with this object.
class StagingDir {
 public:
  static Result<StagingDir> create(const policy::LandlockPlan& plan);
  StagingDir(StagingDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  StagingDir& operator=(StagingDir&&) = delete;
  ~StagingDir();
  const std::string& path() const { return path_; }

 private:
  explicit StagingDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace sv::tracer
