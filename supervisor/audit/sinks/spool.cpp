// Spool: see spool.h.
#include "supervisor/audit/sinks/spool.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace sv::supervisor::audit {

Result<std::unique_ptr<Spool>> Spool::create(const std::string& dir, uint64_t cap) {
  const std::string where = dir.empty() ? "/var/tmp" : dir;
  UniqueFd fd(::open(where.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd && (errno == EOPNOTSUPP || errno == EISDIR)) {
    // A filesystem without O_TMPFILE: a named file, unlinked at once. Mode
    // 0000, so that for the moment it has a name nobody without
    // CAP_DAC_OVERRIDE (the tree has none) can open it; we hold it open
    // O_RDWR from the create. The name is self-protected for writes
    // (policy/self_protect.cpp: audit-spool).
    for (int attempt = 0; attempt < 100 && !fd; ++attempt) {
      uint64_t r = 0;
      if (::getrandom(&r, sizeof r, 0) != sizeof r) break;
      char name[32];
      std::snprintf(name, sizeof name, "supervise-spool-%012llx",
                    static_cast<unsigned long long>(r & 0xffffffffffffULL));
      const std::string path = where + "/" + name;
      fd.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0));
      if (fd) ::unlink(path.c_str());
      else if (errno != EEXIST) break;
    }
  }
  if (!fd) return errnoError("audit spool in " + where);
  auto spool = std::unique_ptr<Spool>(new Spool(std::move(fd), cap));
  spool->chunk_.reserve(64u << 10);
  return spool;
}

Status Spool::push(std::string_view record) {
  uint32_t len = uint32_t(record.size());
  iovec iov[2] = {{&len, kHeader}, {const_cast<char*>(record.data()), record.size()}};
  const size_t total = kHeader + record.size();
  ssize_t n = ::pwritev(fd_.get(), iov, 2, off_t(write_pos_));
  if (n < 0) return errnoError("write audit spool");
  // A short write (disk full) leaves a torn tail past write_pos_, which the
  // next push overwrites: the record counts as not spooled.
  if (size_t(n) != total) return Error{ENOSPC, "audit spool: short write"};
  write_pos_ += total;
  ++records_;
  return {};
}

Status Spool::popInto(size_t budget, std::string& buf, std::vector<uint32_t>& lens) {
  size_t moved = 0;
  while (records_ > 0 && moved < budget) {
    const size_t want = std::max<size_t>(budget - moved, 4096);
    if (chunk_.size() < want) chunk_.resize(want);
    const size_t to_read = size_t(std::min<uint64_t>(chunk_.size(), bytes()));
    ssize_t n = ::pread(fd_.get(), chunk_.data(), to_read, off_t(read_pos_));
    if (n < 0) return errnoError("read audit spool");
    size_t at = 0;
    bool grew = false;
    while (records_ > 0 && moved < budget && at + kHeader <= size_t(n)) {
      uint32_t len;
      std::memcpy(&len, chunk_.data() + at, kHeader);
      if (at + kHeader + len > size_t(n)) {
        // One record longer than the chunk: read it whole next time.
        if (at == 0 && kHeader + len > chunk_.size()) {
          chunk_.resize(kHeader + len);
          grew = true;
        }
        break;
      }
      buf.append(chunk_.data() + at + kHeader, len);
      lens.push_back(len);
      at += kHeader + len;
      moved += len;
      --records_;
    }
    read_pos_ += at;
    if (at == 0 && !grew) return Error{EIO, "audit spool: truncated record"};
  }
  if (records_ == 0) {
    // Empty: start over at offset 0 and give the blocks back.
    write_pos_ = read_pos_ = 0;
    (void)::ftruncate(fd_.get(), 0);
  } else if (read_pos_ >= (1u << 20)) {
    (void)::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                      off_t(read_pos_ & ~uint64_t(4095)));
  }
  return {};
}

}  // namespace sv::supervisor::audit
