// Keeper links (tracer/bpf/bpf_keepers.h): pinned for the boot, attached to an
// empty cgroup of their own, recreated when someone removed that cgroup.
#include "tracer/bpf/bpf_keepers.h"

#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <string>

#include "common/unique_fd.h"
#include "tests/common/run_command.h"
#include "tracer/cgroup.h"

namespace sv::tracer {
namespace {

// The cgroup id the pinned keeper link of `type` is attached to (0: none).
uint64_t keeperCgroupId(const std::string& dir, bpf_attach_type type) {
  UniqueFd link(bpf_obj_get((dir + "/keep-cgroup-" + std::to_string(type)).c_str()));
  if (!link) return 0;
  bpf_link_info info{};
  __u32 len = sizeof info;
  if (bpf_obj_get_info_by_fd(link.get(), &info, &len) != 0) return 0;
  return info.cgroup.cgroup_id;
}

uint64_t inodeOf(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;  // cgroup2: the inode is the id
}

TEST(BpfKeepers, PinnedOnAnEmptyCgroupAndRecreatedWhenItIsRemoved) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: euid " << ::geteuid();
  auto root = findCgroup2Mount();
  if (!root) GTEST_SKIP() << "needs cgroup v2: " << root.error().message();
  const std::string dir = keeperPinDir();
  ASSERT_FALSE(dir.empty()) << "no bpffs and none could be mounted at /sys/fs/bpf";

  const std::array types = {BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET_SOCK_CREATE};
  ensureCgroupKeepers(types);
  const std::string keepers = *root + "/supervise.keepers";
  for (bpf_attach_type type : types)
    EXPECT_EQ(keeperCgroupId(dir, type), inodeOf(keepers)) << "attach type " << type;
  EXPECT_EQ(sv::test::slurp(keepers + "/cgroup.procs"), "") << "no process may ever run there";

  // Someone removes the keepers' cgroup (its links may hold it offline for a
  // while): the next session attaches fresh keepers to a new one.
  const uint64_t old_id = inodeOf(keepers);
  ASSERT_EQ(::rmdir(keepers.c_str()), 0);
  ensureCgroupKeepers(types);
  EXPECT_NE(inodeOf(keepers), old_id);
  for (bpf_attach_type type : types) {
    EXPECT_NE(keeperCgroupId(dir, type), 0u) << "attach type " << type;
    EXPECT_EQ(keeperCgroupId(dir, type), inodeOf(keepers)) << "attach type " << type;
  }
}

}  // namespace
}  // namespace sv::tracer
