// Spool: the on-disk overflow of a sink's queue while its receiver is down.
//
// A FIFO of framed records in an unlinked file (O_TMPFILE in the spool
// directory, so nothing is left behind by a crash and no other process can
// read it). Each record is stored behind its 32-bit length. The cap counts
// the bytes not yet replayed; the space of replayed records is given back
// (FALLOC_FL_PUNCH_HOLE, or truncation when the spool empties). push() does
// one pwritev and no allocation, so a full memory queue can spill from the
// decision path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::supervisor::audit {

class Spool {
 public:
  // dir: where the unlinked file lives (/var/tmp when empty). cap: bytes.
  static Result<std::unique_ptr<Spool>> create(const std::string& dir, uint64_t cap);

  bool empty() const { return records_ == 0; }
  uint64_t records() const { return records_; }
  uint64_t bytes() const { return write_pos_ - read_pos_; }
  bool fits(size_t len) const { return bytes() + len + kHeader <= cap_; }
  // Appends one record; the caller checked fits() (or forces one record past
  // the cap: session events are never dropped).
  Status push(std::string_view record);
  // Moves whole records, oldest first, to the end of buf (their lengths to
  // lens) until about `budget` bytes moved. Runs on the loop thread.
  Status popInto(size_t budget, std::string& buf, std::vector<uint32_t>& lens);

 private:
  static constexpr size_t kHeader = sizeof(uint32_t);
  Spool(UniqueFd fd, uint64_t cap) : fd_(std::move(fd)), cap_(cap) {}
  UniqueFd fd_;
  uint64_t cap_;
  uint64_t write_pos_ = 0, read_pos_ = 0, records_ = 0;
  std::string chunk_;
};

}  // namespace sv::supervisor::audit
