// libFuzzer entry for the user-notify request decoder (supervisor/
// notify_decode.h), fed synthetic seccomp_data: the first bytes are the
// struct as the kernel would hand it over; one more byte, when present,
// replaces the syscall number by one the seccomp plan notifies, so most
// inputs exercise a real case. Properties for every input:
//  - a syscall is decoded exactly when the plan can notify it, and then
//    has a name;
//  - decoding is a pure function (the same request twice, the same answer);
//  - every pointer is an argument register unchanged, every fd is AT_FDCWD
//    or the low half of an argument (nothing is invented or sign-mangled).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "supervisor/notify/notify_decode.h"
#include "tracer/seccomp/seccomp_filter.h"

namespace {

using sv::supervisor::CallKind;
using sv::supervisor::DecodedCall;
using sv::supervisor::decodeCall;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

const std::vector<int>& notified() {
  static const std::vector<int> nrs = [] {
    sv::policy::SeccompPlan all;
    all.notify_write_opens = all.notify_read_opens = all.notify_exec = true;
    all.notify_links_renames_and_attrs = true;
    all.notify_socket_families = true;
    return sv::tracer::notifiedSyscalls(all);
  }();
  return nrs;
}

bool same(const DecodedCall& a, const DecodedCall& b) {
  return a.kind == b.kind && a.name == b.name && a.dirfd == b.dirfd && a.path == b.path &&
         a.dirfd2 == b.dirfd2 && a.path2 == b.path2 && a.flags == b.flags && a.mode == b.mode &&
         a.file_type == b.file_type && a.dev == b.dev && a.length == b.length && a.uid == b.uid &&
         a.gid == b.gid && a.times == b.times && a.times_kind == b.times_kind && a.arg == b.arg &&
         a.value == b.value && a.size == b.size && a.follow == b.follow && a.remove == b.remove;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  seccomp_data req{};
  if (size < sizeof req) return 0;
  std::memcpy(&req, data, sizeof req);
  const std::vector<int>& nrs = notified();
  if (size > sizeof req) req.nr = nrs[data[sizeof req] % nrs.size()];

  const DecodedCall d = decodeCall(req);
  check(same(d, decodeCall(req)));
  const bool known = std::binary_search(nrs.begin(), nrs.end(), req.nr);
  check(known == (d.kind != CallKind::Unsupported));
  check(known == (d.name[0] != '\0'));

  auto fromArg = [&req](uint64_t v) {
    if (v == 0) return true;
    for (uint64_t a : req.args)
      if (a == v) return true;
    return false;
  };
  auto fdFromArg = [&req](int fd) {
    if (fd == AT_FDCWD) return true;
    for (uint64_t a : req.args)
      if (static_cast<int>(static_cast<uint32_t>(a)) == fd) return true;
    return false;
  };
  check(fromArg(d.path) && fromArg(d.path2) && fromArg(d.arg) && fromArg(d.value) &&
        fromArg(d.times));
  check(fdFromArg(d.dirfd) && fdFromArg(d.dirfd2));
  return 0;
}
