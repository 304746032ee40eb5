// SyscallAnswer: how the handler's verdict on one syscall reaches the target.
//
// The host backend answers through the user-notify listener, where the
// handler emulates the operation and hands an opened file over with ADDFD.
// The ptrace backend (supervisor/ptrace/) records the verdict and applies it
// to the stopped task's registers once the handler returns: it has no ADDFD,
// so an allowed open runs in the target itself, on exactly the path that was
// decided (openExactly), and an exec runs if the binary the kernel loaded is
// one of the files judged (execIf). Everything else is emulated the same way
// by both: the handler performs it on pinned fds and the answer is a value.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tracer/bpf/exec_file_id.h"
#include "tracer/seccomp/notify.h"

namespace sv::supervisor {

class SyscallAnswer {
 public:
  virtual ~SyscallAnswer() = default;

  // The request still waits, so the pid in it still names the caller:
  // anything read from the target is trusted only while this holds.
  virtual bool pending(uint64_t id) = 0;
  // Fail the syscall with `err` (positive errno).
  virtual void fail(uint64_t id, int err) = 0;
  // Return `value` without running the syscall (it was emulated).
  virtual void value(uint64_t id, int64_t value) = 0;
  // Run the syscall as issued: only where the decision rests on registers
  // alone (socket families).
  virtual void proceed(uint64_t id) = 0;
  // Let the exec run; the kernel loads the binary itself, and `files` are
  // what was judged (binary, "#!" interpreters) for a re-check at load;
  // `args`, when not empty, the whole argv the decision read (the loader's
  // program), which the new image must have exactly.
  virtual void execIf(uint64_t id, const std::vector<tracer::ExecFileId>& files,
                      std::string_view args) = 0;

  // The user-notify listener (opens emulated, the fd added with ADDFD); null
  // where there is none (ptrace), and the two calls below take its place.
  virtual tracer::NotifyListener* listener() = 0;
  // The open runs in the target as openat2 of `path` (absolute, no
  // symlinks, as resolved for the decision) with RESOLVE_NO_SYMLINKS and
  // RESOLVE_NO_MAGICLINKS, from a copy of the path no task can write;
  // `flags` are open(2) flags openat2 accepts (the handler masks them).
  virtual void openExactly(uint64_t id, std::string_view path, int flags, unsigned mode) = 0;
  // The open of a held pipe or socket becomes a dup of the target's fd `fd`.
  virtual void dupHeld(uint64_t id, int fd, bool cloexec) = 0;

  // "seccomp" or "ptrace": the events' enforced_by.
  virtual const char* enforcedBy() const = 0;
};

// The host backend's answer: the user-notify listener.
class ListenerAnswer final : public SyscallAnswer {
 public:
  explicit ListenerAnswer(tracer::NotifyListener& listener) : listener_(listener) {}
  bool pending(uint64_t id) override { return listener_.idValid(id); }
  void fail(uint64_t id, int err) override { (void)listener_.respondErrno(id, err); }
  void value(uint64_t id, int64_t v) override { (void)listener_.respondValue(id, v); }
  void proceed(uint64_t id) override { (void)listener_.respondContinue(id); }
  // The in-kernel re-check (ProcTracker) holds the files, not the answer.
  void execIf(uint64_t id, const std::vector<tracer::ExecFileId>&, std::string_view) override {
    proceed(id);
  }
  tracer::NotifyListener* listener() override { return &listener_; }
  void openExactly(uint64_t id, std::string_view, int, unsigned) override { fail(id, ENOSYS); }
  void dupHeld(uint64_t id, int, bool) override { fail(id, ENOSYS); }
  const char* enforcedBy() const override { return "seccomp"; }

 private:
  tracer::NotifyListener& listener_;
};

}  // namespace sv::supervisor
