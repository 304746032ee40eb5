// Keepers: no-op BPF attachments that stay for the boot, so a session never
// attaches the first, or detaches the last, program of a kind.
//
// Why: the kernel does expensive work on exactly those edges. The first
// cgroup program of an attach type anywhere flips a static key
// (cgroup_bpf_enabled_key[type]), which patches kernel text with
// cross-CPU synchronisation, and the last one flips it back: 0.4-1.2 ms per
// link on this VM, at attach and again at exit, for the ~7 links of a
// session. With a keeper in place the session's edges are 1->2 and 2->1,
// which are plain counter updates. (The process tracker's tracepoint
// programs need none: they are attached once per boot and shared, see
// proc_tracker.cpp.)
//
// A keeper is a program that returns "allow", its link pinned under
// <bpffs>/supervise/, attached to an empty cgroup of its own
// (<cgroup2 root>/supervise.keepers) that no process ever joins, so it never
// runs. Everything here is best effort: on failure the session only pays the
// edges itself.
#pragma once

#include <bpf/bpf.h>

#include <span>
#include <string>

namespace sv::tracer {

// <bpffs>/supervise, created on first use; "" when there is no bpffs. When
// none is mounted, mounts one at /sys/fs/bpf (mode 0700), as systemd does at
// boot; hosts without systemd (this VM) otherwise start every boot without.
std::string keeperPinDir();

// One cgroup keeper per attach type (cgroup sock and sock_addr types).
void ensureCgroupKeepers(std::span<const bpf_attach_type> types);

}  // namespace sv::tracer
