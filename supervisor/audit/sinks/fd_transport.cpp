// Fd and file transports: see fd_transport.h.
#include "supervisor/audit/sinks/fd_transport.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

namespace sv::supervisor::audit {
namespace {

// write(2) to a pipe whose reader is gone raises SIGPIPE, which would kill the
// supervisor (and with it the supervised tree). Block it for this thread
// around the write and consume the one we caused; a SIGPIPE that was already
// pending before stays pending for whoever expects it.
ssize_t writeNoSigpipe(int fd, const char* data, size_t len) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t n = ::write(fd, data, len);
  int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    timespec zero{};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

enum class WriteMode { kFile, kNonBlocking, kSocket, kBlocking };

class FdTransport : public Transport {
 public:
  FdTransport(std::string name, UniqueFd fd, WriteMode mode)
      : name_(std::move(name)), fd_(std::move(fd)), mode_(mode) {}
  const std::string& name() const override { return name_; }
  int pollFd() const override { return fd_.get(); }

  Result<size_t> write(const char* data, size_t len) override {
    for (;;) {
      ssize_t n;
      switch (mode_) {
        case WriteMode::kSocket:
          n = ::send(fd_.get(), data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
          break;
        case WriteMode::kFile:
          n = ::write(fd_.get(), data, len);
          break;
        default:
          n = writeNoSigpipe(fd_.get(), data, len);
          break;
      }
      if (n >= 0) return size_t(n);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t(0);
      return errnoError("write audit sink " + name_);
    }
  }

 protected:
  std::string name_;
  UniqueFd fd_;
  WriteMode mode_;
};

class FileTransport : public FdTransport {
 public:
  FileTransport(std::string path, UniqueFd fd, uint64_t size, FileRotation rotation)
      : FdTransport(path, std::move(fd), WriteMode::kFile),
        rotation_(rotation),
        size_(size) {
    // Built once: rotation renames run on the loop or the notify thread and
    // must not allocate on the way.
    for (int i = 0; i < rotation_.max_files; ++i)
      names_.push_back(i == 0 ? name_ : name_ + "." + std::to_string(i));
  }

  Result<size_t> write(const char* data, size_t len) override {
    if (rotation_.max_bytes && size_ + len > rotation_.max_bytes) {
      // Write the whole records that still fit; rotate when none does.
      size_t room = size_ < rotation_.max_bytes ? rotation_.max_bytes - size_ : 0;
      const void* nl = room ? memrchr(data, '\n', std::min(room, len)) : nullptr;
      if (!nl && size_ > 0) {
        SV_TRY(rotate());
        nl = memrchr(data, '\n', std::min<size_t>(rotation_.max_bytes, len));
      }
      // One record longer than the cap goes alone into a file of its own.
      if (!nl) nl = memchr(data, '\n', len);
      if (nl) len = size_t(static_cast<const char*>(nl) - data) + 1;
    }
    auto n = FdTransport::write(data, len);
    if (n) size_ += *n;
    return n;
  }

  Status reopen() override {
    UniqueFd fd(::open(name_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600));
    if (!fd) return errnoError("reopen audit log " + name_);
    struct stat st {};
    if (fstat(fd.get(), &st) < 0) return errnoError("fstat audit log " + name_);
    fd_ = std::move(fd);
    size_ = uint64_t(st.st_size);
    return {};
  }

 private:
  Status rotate() {
    // path.N-1 goes, each older one moves up, the live file becomes path.1.
    // ENOENT is normal (fewer files so far).
    if (names_.size() == 1) {
      if (::unlink(name_.c_str()) < 0 && errno != ENOENT) return errnoError("rotate " + name_);
    }
    for (size_t i = names_.size() - 1; i >= 1; --i) {
      if (::rename(names_[i - 1].c_str(), names_[i].c_str()) < 0 && errno != ENOENT)
        return errnoError("rotate " + names_[i - 1]);
    }
    return reopen();
  }

  FileRotation rotation_;
  uint64_t size_;
  std::vector<std::string> names_;
};

}  // namespace

Result<std::unique_ptr<Transport>> openFileTransport(const std::string& path,
                                                     FileRotation rotation) {
  // O_NONBLOCK: a FIFO at that path must not block us in open() waiting for a
  // reader (ENXIO instead), and then writes to it must not block either.
  // Regular files ignore it.
  UniqueFd fd(::open(path.c_str(),
                     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600));
  if (!fd) return errnoError("open audit log " + path);
  struct stat st {};
  if (fstat(fd.get(), &st) < 0) return errnoError("fstat audit log " + path);
  if (S_ISREG(st.st_mode)) {
    if (rotation.max_files < 1) rotation.max_files = 1;
    return std::unique_ptr<Transport>(
        new FileTransport(path, std::move(fd), uint64_t(st.st_size), rotation));
  }
  const WriteMode mode = S_ISSOCK(st.st_mode) ? WriteMode::kSocket : WriteMode::kNonBlocking;
  return std::unique_ptr<Transport>(new FdTransport(path, std::move(fd), mode));
}

Result<std::unique_ptr<Transport>> openFdTransport(std::string name, UniqueFd fd,
                                                   bool shared_with_command) {
  struct stat st {};
  if (fstat(fd.get(), &st) < 0) return errnoError("fstat audit sink " + name);
  WriteMode mode;
  if (S_ISREG(st.st_mode)) {
    mode = WriteMode::kFile;
  } else if (S_ISSOCK(st.st_mode)) {
    mode = WriteMode::kSocket;  // MSG_DONTWAIT per call, no shared flag touched
  } else {
    // Pipe, FIFO, tty: reopening the magic link yields a new open file
    // description of the same object, so O_NONBLOCK stays ours.
    std::string link = "/proc/self/fd/" + std::to_string(fd.get());
    UniqueFd own(::open(link.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (own) {
      fd = std::move(own);
      mode = WriteMode::kNonBlocking;
    } else if (!shared_with_command) {
      // No /proc or no reader yet (ENXIO): setting O_NONBLOCK on the shared
      // description only affects whoever handed us the fd, which is acceptable.
      int fl = fcntl(fd.get(), F_GETFL);
      mode = fl >= 0 && fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) == 0 ? WriteMode::kNonBlocking
                                                                        : WriteMode::kBlocking;
    } else {
      // Never flip O_NONBLOCK under the command's stdout; blocking writes it is.
      mode = WriteMode::kBlocking;
    }
  }
  return std::unique_ptr<Transport>(new FdTransport(std::move(name), std::move(fd), mode));
}

}  // namespace sv::supervisor::audit
