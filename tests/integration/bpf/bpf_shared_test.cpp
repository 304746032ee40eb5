// bpf_shared.h's building blocks: the pin name a build gets, a claim's owner
// check, and the slot ring buffers of a map-of-maps (root: BPF maps).
#include "tracer/bpf/bpf_shared.h"

#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "sv_net.object_id.h"
#include "sv_proc.object_id.h"

namespace sv::tracer {
namespace {

TEST(SharedPinName, OneNamePerObjectAndAbi) {
  EXPECT_EQ(sharedPinName("net", 4, "0123456789abcdef"), "net-v4-0123456789abcdef");
  EXPECT_NE(sharedPinName("net", 4, "0123456789abcdef"), sharedPinName("net", 4, "0123456789abcdee"));
  EXPECT_NE(sharedPinName("net", 4, "0123456789abcdef"), sharedPinName("net", 5, "0123456789abcdef"));
}

// The build's ids: 16 hex digits of the objects' SHA-256, one per object.
TEST(SharedPinName, BuildIdsNameTheObjects) {
  for (const char* id : {SV_NET_OBJECT_ID, SV_PROC_OBJECT_ID}) {
    ASSERT_EQ(std::strlen(id), 16u) << id;
    EXPECT_EQ(std::strspn(id, "0123456789abcdef"), 16u) << id;
  }
  EXPECT_STRNE(SV_NET_OBJECT_ID, SV_PROC_OBJECT_ID);
}

// A claim names its supervisor by pid and start time: alive while it runs,
// gone once it died, and never "alive" for a reused pid with another start.
TEST(ClaimOwner, AliveOnlyWhileThatVeryProcessRuns) {
  EXPECT_TRUE(claimOwnerAlive(static_cast<uint32_t>(::getpid()), processStartTime(::getpid())));
  EXPECT_FALSE(claimOwnerAlive(static_cast<uint32_t>(::getpid()),
                               processStartTime(::getpid()) + 1));
  EXPECT_FALSE(claimOwnerAlive(0, 0));
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const uint64_t start = processStartTime(child);
  EXPECT_NE(start, 0u);
  EXPECT_TRUE(claimOwnerAlive(static_cast<uint32_t>(child), start));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(claimOwnerAlive(static_cast<uint32_t>(child), start));
}

// A slot's ring buffer is created once and found again by the next session.
TEST(SlotRingBuffer, CreatedOnceAndReused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for BPF maps";
  UniqueFd inner(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sv_t_inner", 0, 0, 4096, nullptr));
  if (!inner) GTEST_SKIP() << "needs BPF ring buffers: " << std::strerror(errno);
  LIBBPF_OPTS(bpf_map_create_opts, opts, .inner_map_fd = static_cast<__u32>(inner.get()));
  UniqueFd rings(bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "sv_t_rings", 4, 4, 2, &opts));
  ASSERT_TRUE(rings) << std::strerror(errno);
  auto first = slotRingBuffer(rings.get(), 1, 4096, "sv_t_ring");
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto again = slotRingBuffer(rings.get(), 1, 4096, "sv_t_ring");
  ASSERT_TRUE(again.ok()) << again.error().message();
  bpf_map_info a{}, b{};
  __u32 len = sizeof a;
  ASSERT_EQ(bpf_obj_get_info_by_fd(first->get(), &a, &len), 0);
  len = sizeof b;
  ASSERT_EQ(bpf_obj_get_info_by_fd(again->get(), &b, &len), 0);
  EXPECT_EQ(a.id, b.id) << "the slot's ring buffer was made twice";
  auto other = slotRingBuffer(rings.get(), 0, 4096, "sv_t_ring");
  ASSERT_TRUE(other.ok()) << other.error().message();
  bpf_map_info c{};
  len = sizeof c;
  ASSERT_EQ(bpf_obj_get_info_by_fd(other->get(), &c, &len), 0);
  EXPECT_NE(c.id, a.id);
}

// Another build's load goes once no live supervisor holds a slot in it; one
// a running session uses stays.
TEST(SharedPins, RemovesOnlyUnusedSiblingLoads) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for bpffs pins";
  const std::string prefix = "sv-test" + std::to_string(::getpid());
  SharedPins mine(prefix + "-v1-mine");
  if (!mine.pinned()) GTEST_SKIP() << "needs a bpffs (keeperPinDir)";
  struct Slot {
    uint64_t cgroup_id;
    uint32_t flags, owner_pid;
    uint64_t owner_start;
  };
  auto sibling = [&](const std::string& tag, const Slot& slot0) {
    SharedPins pins(prefix + "-v1-" + tag);
    UniqueFd map(bpf_map_create(BPF_MAP_TYPE_ARRAY, "sessions", 4, sizeof(Slot), 4, nullptr));
    EXPECT_TRUE(map) << std::strerror(errno);
    const uint32_t zero = 0;
    EXPECT_EQ(bpf_map_update_elem(map.get(), &zero, &slot0, BPF_ANY), 0);
    const int fds[] = {map.get()};
    const char* names[] = {"sessions"};
    EXPECT_TRUE(pins.pin(fds, names).ok());
    return pins.dir();
  };
  const std::string dead =
      sibling("dead", Slot{42, 0, 0x7ffffff0u, 1});  // a claim whose owner is gone
  const std::string live =
      sibling("live", Slot{43, 0, static_cast<uint32_t>(::getpid()), processStartTime(::getpid())});
  const std::string free_slots = sibling("free", Slot{});
  mine.removeUnusedSiblings(prefix.c_str());
  EXPECT_NE(::access(dead.c_str(), F_OK), 0) << "a load no one uses stayed";
  EXPECT_NE(::access(free_slots.c_str(), F_OK), 0) << "a load no one uses stayed";
  EXPECT_EQ(::access(live.c_str(), F_OK), 0) << "a running session's load was removed";
  ::unlink((live + "/sessions").c_str());
  ::rmdir(live.c_str());
}

}  // namespace
}  // namespace sv::tracer
