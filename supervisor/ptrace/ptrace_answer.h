// PtraceAnswer: the ptrace backend's SyscallAnswer. It only records the
// handler's verdict on the stopped task; the tracing thread applies it to
// the task's registers when the handler returns (trace_thread.cpp).
#pragma once

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/notify/syscall_answer.h"

namespace sv::supervisor {

struct PtraceVerdict {
  enum class Kind { None, Fail, Value, Proceed, Exec, Open, Dup };
  Kind kind = Kind::None;
  int64_t value = 0;  // Fail: errno; Value: the result
  std::string path;   // Open
  int flags = 0;      // Open
  unsigned mode = 0;  // Open
  int fd = -1;        // Dup
  bool cloexec = false;
  std::vector<tracer::ExecFileId> files;  // Exec
  std::string args;                       // Exec: the whole argv the decision read, or ""
};

class PtraceAnswer final : public SyscallAnswer {
 public:
  // A new request: the verdict starts empty.
  void begin(uint64_t id) {
    id_ = id;
    verdict_ = PtraceVerdict{};
  }
  PtraceVerdict& verdict() { return verdict_; }

  // A task in a ptrace stop can't run, and can't be reaped by anyone but
  // us: its pid names it until we let it go.
  bool pending(uint64_t id) override { return id == id_; }
  void fail(uint64_t, int err) override { set(PtraceVerdict::Kind::Fail).value = err; }
  void value(uint64_t, int64_t v) override { set(PtraceVerdict::Kind::Value).value = v; }
  void proceed(uint64_t) override { set(PtraceVerdict::Kind::Proceed); }
  void execIf(uint64_t, const std::vector<tracer::ExecFileId>& files,
              std::string_view args) override {
    PtraceVerdict& v = set(PtraceVerdict::Kind::Exec);
    v.files = files;
    v.args.assign(args);
  }
  tracer::NotifyListener* listener() override { return nullptr; }
  void openExactly(uint64_t, std::string_view path, int flags, unsigned mode) override {
    PtraceVerdict& v = set(PtraceVerdict::Kind::Open);
    v.path.assign(path);
    v.flags = flags;
    v.mode = mode;
  }
  void dupHeld(uint64_t, int fd, bool cloexec) override {
    PtraceVerdict& v = set(PtraceVerdict::Kind::Dup);
    v.fd = fd;
    v.cloexec = cloexec;
  }
  const char* enforcedBy() const override { return "ptrace"; }

 private:
  // The first answer counts, as with a listener (a second SEND fails).
  PtraceVerdict& set(PtraceVerdict::Kind kind) {
    if (verdict_.kind == PtraceVerdict::Kind::None) verdict_.kind = kind;
    return verdict_.kind == kind ? verdict_ : scratch_;
  }
  uint64_t id_ = 0;
  PtraceVerdict verdict_;
  PtraceVerdict scratch_;  // where a second answer goes, unused
};

}  // namespace sv::supervisor
