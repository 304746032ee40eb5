// The kernel audit record parser on records captured on the dev VM (kernel 6.18,
// Landlock ABI 7; testdata/records.txt, one "TYPE TEXT" per line, in arrival order):
// a denied read, write, create, readdir, read of a hex-encoded path, exec, signal
// (LANDLOCK_SCOPE_SIGNAL), abstract unix connect, seccomp ERRNO/KILL_PROCESS and a
// USER_NOTIF answered with an error, plus the unrelated records around them.
#include "tracer/kernel_audit/audit_records.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tracer/kernel_audit/audit_abi.h"

namespace sv::tracer::kernel_audit {
namespace {

struct Line {
  uint16_t type;
  std::string text;
};

std::vector<Line> loadRecords() {
  std::ifstream in(SV_KERNEL_AUDIT_TESTDATA "/records.txt");
  std::vector<Line> lines;
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    lines.push_back({static_cast<uint16_t>(std::stoi(line.substr(0, sp))), line.substr(sp + 1)});
  }
  return lines;
}

RecordAssembler::Output assembleAll(const std::vector<Line>& lines) {
  RecordAssembler a;
  RecordAssembler::Output out;
  for (const auto& l : lines) a.feed(l.type, l.text, out);
  EXPECT_EQ(a.openEvents(), 0U) << "every Landlock event of the capture ends with EOE";
  a.flushAll(out);
  EXPECT_EQ(a.malformed(), 0U);
  return out;
}

const KernelDenial* findBlocker(const RecordAssembler::Output& out, std::string_view blocker) {
  for (const auto& d : out.denials)
    if (!d.blockers.empty() && d.blockers.front() == blocker) return &d;
  return nullptr;
}

TEST(AuditRecords, ParsesStamp) {
  std::string_view body;
  auto s = parseStamp("audit(1796171915.201:3): domain=1", &body);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->sec, 1796171915U);
  EXPECT_EQ(s->msec, 201U);
  EXPECT_EQ(s->serial, 3U);
  EXPECT_EQ(body, "domain=1");
  EXPECT_FALSE(parseStamp("audit(1796171915:3): x", &body));
  EXPECT_FALSE(parseStamp("audit(1.2:3", &body));
  EXPECT_FALSE(parseStamp("audit(1.2000:3): x", &body));
  EXPECT_FALSE(parseStamp("", &body));
  // EOE: an empty body.
  ASSERT_TRUE(parseStamp("audit(1796171915.201:3): ", &body));
  EXPECT_TRUE(body.empty());
}

TEST(AuditRecords, DecodesHexOnlyForUntrustedKeys) {
  auto f = parseFields("domain=105402af8 path=2F746D70 ino=2F a1=2F exe=\"/bin/x\" key=(null)");
  ASSERT_EQ(f.size(), 5U);
  EXPECT_EQ(f[1].key, "path");
  EXPECT_EQ(f[1].value, "/tmp");
  EXPECT_TRUE(f[1].hex);
  EXPECT_EQ(f[2].value, "2F");  // ino is a number, never hex text
  EXPECT_EQ(f[3].value, "2F");
  EXPECT_EQ(f[4].value, "/bin/x");
  EXPECT_FALSE(f[4].hex);
  EXPECT_EQ(decodeHex("006B"), std::string("\0k", 2));
  EXPECT_FALSE(decodeHex("0"));
  EXPECT_FALSE(decodeHex("0G"));
}

TEST(AuditRecords, CapturedLandlockDenials) {
  const auto out = assembleAll(loadRecords());
  size_t landlock = 0;
  for (const auto& d : out.denials) landlock += d.kind != DenialKind::kSeccomp;
  EXPECT_EQ(landlock, 8U);

  const KernelDenial* read = findBlocker(out, "fs.read_file");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->kind, DenialKind::kLandlockFs);
  EXPECT_EQ(read->domain, 0x105402b97U);
  EXPECT_EQ(read->path, "/etc/hostname");
  EXPECT_EQ(read->dev, "vda");
  EXPECT_EQ(read->ino, 733U);
  EXPECT_EQ(read->pid, 9995);
  EXPECT_EQ(read->comm, "probe");
  EXPECT_EQ(read->exe, "/tmp/kprobe/probe");
  EXPECT_EQ(read->syscall_nr, 257);  // openat
  EXPECT_EQ(read->arch, 0xc000003eU);
  ASSERT_TRUE(read->syscall_record);
  EXPECT_FALSE(read->syscall_record->success);
  EXPECT_EQ(read->syscall_record->exit, -13);
  EXPECT_EQ(read->syscall_record->ppid, 9992);
  EXPECT_EQ(read->syscall_record->uid, 0);
  ASSERT_TRUE(read->domain_allocated);
  EXPECT_TRUE(read->domain_allocated->allocated);
  EXPECT_EQ(read->domain_allocated->pid, 9995);
  EXPECT_EQ(read->domain_allocated->mode, "enforcing");
  ASSERT_TRUE(read->proctitle);
  EXPECT_EQ(*read->proctitle, std::string("probe\0ll-child\0read\0"
                                          "0\0"
                                          "9993",
                                          26));

  const KernelDenial* write = findBlocker(out, "fs.write_file");
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->path, "/etc/hostname");

  const KernelDenial* create = findBlocker(out, "fs.make_reg");
  ASSERT_NE(create, nullptr);
  EXPECT_EQ(create->path, "/etc");  // Landlock names the directory the file would go in
  EXPECT_EQ(create->ino, 19U);

  const KernelDenial* readdir = findBlocker(out, "fs.read_dir");
  ASSERT_NE(readdir, nullptr);
  EXPECT_EQ(readdir->path, "/etc");

  const KernelDenial* exec = findBlocker(out, "fs.execute");
  ASSERT_NE(exec, nullptr);
  EXPECT_EQ(exec->blockers, (std::vector<std::string>{"fs.execute", "fs.read_file"}));
  EXPECT_EQ(exec->path, "/tmp/kprobe_out/true");
  EXPECT_EQ(exec->syscall_nr, 59);  // execve
  EXPECT_EQ(exec->syscall_record->exit, -13);

  const KernelDenial* signal = findBlocker(out, "scope.signal");
  ASSERT_NE(signal, nullptr);
  EXPECT_EQ(signal->kind, DenialKind::kLandlockScope);
  EXPECT_EQ(signal->opid, 10018);
  EXPECT_EQ(signal->ocomm, "probe");
  EXPECT_FALSE(signal->path);
  EXPECT_EQ(signal->syscall_nr, 62);  // kill
  EXPECT_EQ(signal->syscall_record->exit, -1);

  const KernelDenial* abstract = findBlocker(out, "scope.abstract_unix_socket");
  ASSERT_NE(abstract, nullptr);
  EXPECT_EQ(abstract->path, std::string("\0kprobe_abs", 11));
  EXPECT_EQ(abstract->syscall_nr, 42);  // connect
}

TEST(AuditRecords, HexEncodedPathWithHostileBytes) {
  const auto out = assembleAll(loadRecords());
  const KernelDenial* hex = nullptr;
  for (const auto& d : out.denials)
    if (d.ino == 10953282U) hex = &d;
  ASSERT_NE(hex, nullptr);
  // open("/tmp/kprobe_out/a b\x01\xff\"q"): space, control, non-ASCII and a quote.
  EXPECT_EQ(hex->path, std::string("/tmp/kprobe_out/a b\x01\xff\"q"));
}

TEST(AuditRecords, CapturedSeccompRecords) {
  const auto out = assembleAll(loadRecords());
  std::vector<const KernelDenial*> sc;
  for (const auto& d : out.denials)
    if (d.kind == DenialKind::kSeccomp) sc.push_back(&d);
  ASSERT_EQ(sc.size(), 6U);
  EXPECT_EQ(sc[0]->syscall_nr, 101);  // ptrace
  EXPECT_EQ(sc[0]->action, SeccompAction::kErrno);
  // The record's code is the action only (audit_seccomp() gets ACTION_ONLY(ret)):
  // the filter returned ERRNO|EPERM, the record says 0x50000. The errno comes from the
  // plan, which the session knows.
  EXPECT_EQ(sc[0]->code, 0x50000U);
  EXPECT_EQ(sc[0]->errno_value, 0);
  EXPECT_EQ(sc[0]->pid, 10025);
  EXPECT_EQ(sc[0]->arch, 0xc000003eU);
  EXPECT_EQ(sc[0]->sig, 0);
  EXPECT_EQ(sc[0]->comm, "probe");
  EXPECT_EQ(sc[1]->syscall_nr, 272);  // unshare
  EXPECT_EQ(sc[2]->syscall_nr, 246);  // kexec_load
  EXPECT_EQ(sc[2]->action, SeccompAction::kKillProcess);
  EXPECT_EQ(sc[2]->sig, 31);
  EXPECT_EQ(sc[3]->syscall_nr, 257);  // a USER_NOTIF answered with an error is logged too
  EXPECT_EQ(sc[3]->action, SeccompAction::kUserNotif);
  ASSERT_EQ(sc[0]->other.size(), 0U) << sc[0]->other[0].first;
}

TEST(AuditRecords, DomainRecords) {
  const auto out = assembleAll(loadRecords());
  size_t allocated = 0, deallocated = 0;
  for (const auto& d : out.domains) {
    if (d.allocated) {
      ++allocated;
    } else {
      ++deallocated;
      EXPECT_EQ(d.denials, 1U);
    }
  }
  EXPECT_EQ(allocated, 8U);
  EXPECT_EQ(deallocated, 8U);
}

TEST(AuditRecords, EventWithoutAuditContextCompletesAtFlush) {
  // A task forked before audit was first enabled has no audit context: its Landlock
  // records come alone, without SYSCALL or EOE.
  RecordAssembler a;
  RecordAssembler::Output out;
  a.feed(abi::kAuditLandlockAccess,
         "audit(100.000:5): domain=10 blockers=fs.read_file path=\"/x\" dev=\"vda\" ino=1", out);
  a.feed(abi::kAuditLandlockDomain,
         "audit(100.000:6): domain=10 status=allocated mode=enforcing pid=7 uid=0 exe=\"/a\" "
         "comm=\"a\"",
         out);
  EXPECT_TRUE(out.denials.empty());
  a.flushOlderThan(1000, out);
  EXPECT_TRUE(out.denials.empty()) << "not old enough yet";
  a.feed(abi::kAuditSeccomp, "audit(102.000:7): pid=1 syscall=101 code=0x50001", out);
  ASSERT_EQ(out.denials.size(), 1U);
  a.flushOlderThan(1000, out);
  ASSERT_EQ(out.denials.size(), 2U);
  EXPECT_EQ(out.denials[1].path, "/x");
  EXPECT_FALSE(out.denials[1].pid);
  ASSERT_EQ(out.domains.size(), 1U);
  EXPECT_EQ(out.domains[0].pid, 7);
  EXPECT_EQ(a.openEvents(), 0U);
}

TEST(AuditRecords, IgnoresOtherPeoplesSyscallRecords) {
  RecordAssembler a;
  RecordAssembler::Output out;
  for (int i = 0; i < 5000; ++i) {
    const std::string stamp = "audit(1.0:" + std::to_string(i) + "): ";
    a.feed(abi::kAuditSyscall, stamp + "arch=c000003e syscall=2 pid=3", out);
    a.feed(abi::kAuditProctitle, stamp + "proctitle=41", out);
  }
  EXPECT_EQ(a.openEvents(), 0U);
  EXPECT_TRUE(out.denials.empty());
}

TEST(AuditRecords, OpenEventsAreBounded) {
  RecordAssembler a;
  RecordAssembler::Output out;
  for (int i = 0; i < 3000; ++i)
    a.feed(abi::kAuditLandlockAccess,
           "audit(1.0:" + std::to_string(i) + "): domain=1 blockers=fs.read_file", out);
  EXPECT_EQ(a.openEvents(), RecordAssembler::kMaxOpenEvents);
  EXPECT_EQ(a.evicted(), 3000 - RecordAssembler::kMaxOpenEvents);
  a.flushAll(out);
  EXPECT_EQ(out.denials.size(), 3000U);
}

TEST(AuditRecords, HostileComm) {
  // A comm of `x" pid=1 a="` is hex-encoded by the kernel; even if a record carried it
  // raw, the first pid= wins and the rest stays inside one quoted value.
  RecordAssembler a;
  RecordAssembler::Output out;
  a.feed(abi::kAuditSeccomp,
         "audit(1.0:1): pid=42 comm=7822207069643D3120613D22 sig=0 syscall=101 code=0x50001", out);
  ASSERT_EQ(out.denials.size(), 1U);
  EXPECT_EQ(out.denials[0].pid, 42);
  EXPECT_EQ(out.denials[0].comm, "x\" pid=1 a=\"");
  EXPECT_EQ(out.denials[0].errno_value, 1);  // were the kernel ever to log the data
  // Malformed stamps are counted, not parsed.
  a.feed(abi::kAuditSeccomp, "audit(x): pid=1", out);
  EXPECT_EQ(a.malformed(), 1U);
}

TEST(SessionFilter, OwnsTheDomainsItsRootCreated) {
  const auto out = assembleAll(loadRecords());
  const KernelDenial* read = findBlocker(out, "fs.read_file");
  ASSERT_NE(read, nullptr);
  auto nobody = [](int64_t) { return false; };
  SessionFilter mine(9995);
  EXPECT_TRUE(mine.accept(*read, nobody));
  SessionFilter other(12345);
  EXPECT_FALSE(other.accept(*read, nobody));
  EXPECT_TRUE(other.accept(*read, [](int64_t pid) { return pid == 9995; }));
  // A later denial in the same domain, without the allocated record, still belongs.
  KernelDenial later = *read;
  later.domain_allocated.reset();
  later.pid = 777;
  EXPECT_TRUE(mine.accept(later, nobody));
  EXPECT_FALSE(other.accept(later, nobody));
  // seccomp: by pid only.
  KernelDenial sc;
  sc.kind = DenialKind::kSeccomp;
  sc.domain = read->domain;
  sc.pid = 5;
  EXPECT_FALSE(mine.accept(sc, nobody));
  EXPECT_TRUE(mine.accept(sc, [](int64_t pid) { return pid == 5; }));
}

}  // namespace
}  // namespace sv::tracer::kernel_audit
