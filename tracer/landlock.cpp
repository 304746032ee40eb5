// Landlock ruleset construction (parent) and enforcement (child).
#include "tracer/landlock.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/kernel_abi.h"
#include "tracer/probe.h"

namespace sv::tracer {
namespace {

using namespace abi;

constexpr uint64_t kAbi1Fs = kFsExecute | kFsWriteFile | kFsReadFile | kFsReadDir | kFsRemoveDir |
                             kFsRemoveFile | kFsMakeChar | kFsMakeDir | kFsMakeReg | kFsMakeSock |
                             kFsMakeFifo | kFsMakeBlock | kFsMakeSym;

// Rights that only mean something on a directory; the kernel refuses them on
// a rule whose fd is a file (EINVAL), so they are stripped there.
constexpr uint64_t kDirOnly = kFsReadDir | kFsRemoveDir | kFsRemoveFile | kFsMakeChar | kFsMakeDir |
                              kFsMakeReg | kFsMakeSock | kFsMakeFifo | kFsMakeBlock | kFsMakeSym |
                              kFsRefer;

constexpr uint64_t kReadRights = kFsReadFile | kFsReadDir;
constexpr uint64_t kWriteRights = kFsWriteFile | kFsRemoveDir | kFsRemoveFile | kFsMakeChar |
                                  kFsMakeDir | kFsMakeReg | kFsMakeSock | kFsMakeFifo |
                                  kFsMakeBlock | kFsMakeSym | kFsRefer | kFsTruncate | kFsIoctlDev;
constexpr uint64_t kExecRights = kFsExecute;

}  // namespace

int landlockAbi() {
  if (testDisabled("landlock")) return 0;
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

uint64_t landlockHandledFs(int abi) {
  if (abi < 1) return 0;
  uint64_t fs = kAbi1Fs;
  if (abi >= 2) fs |= kFsRefer;
  if (abi >= 3) fs |= kFsTruncate;
  if (abi >= 5) fs |= kFsIoctlDev;
  return fs;
}

Result<UniqueFd> buildLandlockRuleset(const policy::LandlockPlan& plan, int abi,
                                      std::vector<std::string>* skipped) {
  if (abi < 1) return Error{ENOSYS, "landlock: unavailable on this host"};
  LandlockRulesetAttr attr{};
  if (abi >= 6) {
    if (plan.scope_abstract_unix) attr.scoped |= kScopeAbstractUnixSocket;
    if (plan.scope_signal) attr.scoped |= kScopeSignal;
  }
  // Paths left to another backend: handle no file access at all, so no open
  // walks the path up to / looking for rules (2% of a find under bpf-lsm).
  // A ruleset must handle something: without scopes (ABI < 6, or none
  // wanted) it handles everything and allows it all below / instead.
  std::vector<policy::LandlockRule> everything;
  const std::vector<policy::LandlockRule>* rules = &plan.rules;
  if (!plan.paths) {
    if (attr.scoped == 0) everything = {{"/", true, true, true}};
    rules = &everything;
  }
  attr.handled_access_fs = plan.paths || attr.scoped == 0 ? landlockHandledFs(abi) : 0;
  // Older kernels only know the fields they had: pass the size of the struct
  // prefix the ABI defines so the kernel never sees a field it does not know.
  size_t attr_size = abi >= 6 ? sizeof(attr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  int fd = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
  if (fd < 0) return errnoError("landlock_create_ruleset");
  UniqueFd ruleset(fd);

  for (const auto& rule : *rules) {
    uint64_t access = 0;
    if (rule.read) access |= kReadRights;
    if (rule.write) access |= kWriteRights;
    if (rule.exec) access |= kExecRights;
    access &= attr.handled_access_fs;
    if (access == 0) continue;

    // Roots are mostly directories: O_DIRECTORY tells a directory apart in
    // the open itself (no fstat: syscalls are what a ruleset costs).
    UniqueFd path_fd(::open(rule.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!path_fd && errno == ENOTDIR) {
      path_fd.reset(::open(rule.path.c_str(), O_PATH | O_CLOEXEC));
      access &= ~kDirOnly;
      if (path_fd && access == 0) continue;
    }
    if (!path_fd) {
      if (errno == ENOENT || errno == ENOTDIR) {
        if (skipped) skipped->push_back(rule.path);
        continue;
      }
      return errnoError("landlock: open " + rule.path);
    }

    LandlockPathBeneathAttr beneath{};
    beneath.allowed_access = access;
    beneath.parent_fd = path_fd.get();
    if (syscall(SYS_landlock_add_rule, ruleset.get(), kLandlockRulePathBeneath, &beneath, 0) != 0) {
      return errnoError("landlock_add_rule " + rule.path);
    }
  }
  return ruleset;
}

int restrictSelf(int ruleset_fd, unsigned flags) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
  if (syscall(SYS_landlock_restrict_self, ruleset_fd, flags) != 0) return -errno;
  return 0;
}

bool landlockAccepts(uint64_t fs, uint64_t net, uint64_t scoped) {
  abi::LandlockRulesetAttr attr{fs, net, scoped};
  long fd = ::syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (fd < 0) return false;
  ::close(static_cast<int>(fd));
  return true;
}

}  // namespace sv::tracer
