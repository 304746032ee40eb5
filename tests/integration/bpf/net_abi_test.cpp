// The network ABI header compiles as C++ with the layout the BPF side asserts,
// and the skeleton's compiled-in map types match it (BTF of the object).
#include "shared/net_abi.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <cstddef>

#include "sv_net.skel.h"

namespace {

TEST(NetAbi, StructSizesAndOffsets) {
  EXPECT_EQ(sizeof(sv_net_lpm_key), 24u);
  EXPECT_EQ(offsetof(sv_net_lpm_key, plan), 4u);
  EXPECT_EQ(offsetof(sv_net_lpm_key, addr), 8u);
  EXPECT_EQ(sizeof(sv_net_port_range), 8u);
  EXPECT_EQ(sizeof(sv_net_allow_value), 8u + 8u * SV_NET_MAX_PORT_RANGES);
  EXPECT_EQ(offsetof(sv_net_allow_value, ranges), 8u);
  EXPECT_EQ(sizeof(sv_net_event), 56u);
  EXPECT_EQ(offsetof(sv_net_event, session), 8u);
  EXPECT_EQ(offsetof(sv_net_event, abi_version), 16u);
  EXPECT_EQ(offsetof(sv_net_event, rule_index), 20u);
  EXPECT_EQ(offsetof(sv_net_event, pid), 24u);
  EXPECT_EQ(offsetof(sv_net_event, tgid), 28u);
  EXPECT_EQ(offsetof(sv_net_event, family), 32u);
  EXPECT_EQ(offsetof(sv_net_event, port), 34u);
  EXPECT_EQ(offsetof(sv_net_event, sock_type), 36u);
  EXPECT_EQ(offsetof(sv_net_event, plan), 39u);
  EXPECT_EQ(offsetof(sv_net_event, addr), 40u);
  EXPECT_EQ(SV_NET_ABI_VERSION, 4);
  EXPECT_EQ(sizeof(sv_net_dns_key), 20u);
  EXPECT_EQ(offsetof(sv_net_dns_key, port), 16u);
  EXPECT_EQ(offsetof(sv_net_dns_key, slot), 18u);
  EXPECT_EQ(sizeof(sv_net_unix_key), 116u);
  EXPECT_EQ(offsetof(sv_net_unix_key, slot), 4u);
  EXPECT_EQ(offsetof(sv_net_unix_key, path), 8u);
  EXPECT_EQ(sizeof(sv_net_session), 24u);
  EXPECT_EQ(sizeof(sv_net_cgroup_plan), 8u);
  EXPECT_EQ(sizeof(sv_net_dns_target), 24u);
  EXPECT_EQ(offsetof(sv_net_dns_target, rule_index), 20u);
}

// The BPF object's own BTF (what clang laid out for -target bpf) agrees with
// g++'s layout for the map key and value. (sv_net_event has no BTF: the ring
// buffer is untyped; its size is pinned by the _Static_assert the BPF side
// compiles.) Opening an object needs no privileges.
TEST(NetAbi, BpfObjectLayoutMatchesCpp) {
  size_t size = 0;
  const void* bytes = sv_net::elf_bytes(&size);
  bpf_object* obj = bpf_object__open_mem(bytes, size, nullptr);
  ASSERT_NE(obj, nullptr);
  const btf* b = bpf_object__btf(obj);
  ASSERT_NE(b, nullptr);
  struct Want {
    const char* name;
    size_t size;
  } wants[] = {{"sv_net_lpm_key", sizeof(sv_net_lpm_key)},
               {"sv_net_allow_value", sizeof(sv_net_allow_value)},
               {"sv_net_dns_key", sizeof(sv_net_dns_key)},
               {"sv_net_dns_target", sizeof(sv_net_dns_target)},
               {"sv_net_unix_key", sizeof(sv_net_unix_key)},
               {"sv_net_session", sizeof(sv_net_session)},
               {"sv_net_cgroup_plan", sizeof(sv_net_cgroup_plan)}};
  for (const auto& w : wants) {
    int id = btf__find_by_name_kind(b, w.name, BTF_KIND_STRUCT);
    ASSERT_GT(id, 0) << w.name;
    EXPECT_EQ(btf__resolve_size(b, id), static_cast<long>(w.size)) << w.name;
  }
  bpf_object__close(obj);
}

}  // namespace
