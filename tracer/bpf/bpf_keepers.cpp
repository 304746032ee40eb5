// Keeper links; see bpf_keepers.h.
#include "tracer/bpf/bpf_keepers.h"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "common/unique_fd.h"
#include "tracer/cgroup.h"
#include "tracer/mountinfo.h"

namespace sv::tracer {
namespace {

constexpr char kDefaultBpffs[] = "/sys/fs/bpf";
constexpr char kKeeperCgroup[] = "supervise.keepers";

// The bpffs mount point in mountinfo text, "" if none.
std::string bpffsMount(std::string_view mountinfo) {
  auto e = findMountEntry(mountinfo, "bpf");
  return e ? e->mount_point : "";
}

// r0 = value; exit
UniqueFd loadReturning(bpf_prog_type type, bpf_attach_type attach, int value) {
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = value},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach);
  return UniqueFd(bpf_prog_load(type, "sv_keep", "GPL", insns, 2, &opts));
}

// The id of the cgroup a cgroup link is attached to (0: none or not a link).
uint64_t linkCgroupId(int link) {
  bpf_link_info info{};
  __u32 len = sizeof info;
  return bpf_obj_get_info_by_fd(link, &info, &len) == 0 ? info.cgroup.cgroup_id : 0;
}

// keeperPinDir() without the cache.
std::string findOrMakeKeeperPinDir() {
  std::string mount = bpffsMount(mountinfoOnce());
  if (mount.empty()) {
    if (::mount("bpf", kDefaultBpffs, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") != 0)
      return "";
    // A concurrent session may have mounted first: the top one, read afresh.
    auto now = mountinfoNow();
    mount = now ? bpffsMount(*now) : "";
    if (mount.empty()) return "";
  }
  const std::string dir = mount + "/supervise";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
  return dir;
}

}  // namespace

std::string keeperPinDir() {
  // Asked by the tracker's thread and the network load of every start-up;
  // mountinfo is read once per process.
  static const std::string dir = findOrMakeKeeperPinDir();
  return dir;
}

void ensureCgroupKeepers(std::span<const bpf_attach_type> types) {
  const std::string dir = keeperPinDir();
  auto root = findCgroup2Mount();
  if (dir.empty() || !root) return;
  const std::string path = *root + "/" + kKeeperCgroup;
  // A pinned link counts only while it is attached to the keepers' cgroup as
  // it is now: a removed cgroup's links can hold it, offline, for a while.
  struct stat st{};
  const uint64_t keepers_id = ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;  // cgroup2: ino = id
  UniqueFd cgroup;
  for (bpf_attach_type type : types) {
    const std::string pin = dir + "/keep-cgroup-" + std::to_string(type);
    if (UniqueFd existing(bpf_obj_get(pin.c_str())); existing) {
      if (keepers_id != 0 && linkCgroupId(existing.get()) == keepers_id) continue;
      (void)::unlink(pin.c_str());
    }
    if (!cgroup) {
      if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return;
      cgroup.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!cgroup) return;
    }
    const bpf_prog_type prog_type = type == BPF_CGROUP_INET_SOCK_CREATE
                                        ? BPF_PROG_TYPE_CGROUP_SOCK
                                        : BPF_PROG_TYPE_CGROUP_SOCK_ADDR;
    UniqueFd prog = loadReturning(prog_type, type, 1);  // 1: allow
    if (!prog) continue;  // a type this kernel lacks
    UniqueFd link(bpf_link_create(prog.get(), cgroup.get(), type, nullptr));
    if (link) (void)bpf_obj_pin(link.get(), pin.c_str());  // EEXIST: a concurrent session won
  }
}

}  // namespace sv::tracer
