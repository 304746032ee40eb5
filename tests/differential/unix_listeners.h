// Pathname unix sockets that listen, and a thread that accepts and drops
// every connection made to them, for as long as the object lives.
//
// Why listening: the BPF LSM judges a unix connect in unix_stream_connect,
// which the kernel calls only for a listening peer with room in its accept
// queue (a bound socket that does not listen refuses first, ECONNREFUSED,
// and a full queue answers EAGAIN before the hook). A request must reach the
// point where every backend decides.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace sv::differential {

class UnixListeners {
 public:
  static Result<std::unique_ptr<UnixListeners>> start(const std::vector<std::string>& paths);
  ~UnixListeners();  // stops and joins the thread

  UnixListeners(const UnixListeners&) = delete;
  UnixListeners& operator=(const UnixListeners&) = delete;

 private:
  UnixListeners() = default;
  void acceptUntilStopped();

  std::vector<UniqueFd> sockets_;
  UniqueFd stop_;  // eventfd: written by the destructor
  std::thread thread_;
};

}  // namespace sv::differential
