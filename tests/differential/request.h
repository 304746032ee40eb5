// One request of the differential test: a single syscall the runner program
// (run_requests.c) makes and the engine is asked about. Requests travel as
// text, one per line, so the runner needs no C++ and a failing request can be
// copied from the test output into a file and replayed by hand.
//
// Line format (fields separated by one space; paths never hold spaces):
//   open-read D P | open-path D P | open-write D P | create D P | unlink D P |
//   mkdir D P | rmdir D P rename D P D2 P2 | link D P D2 P2 exec P tcp4 IP PORT
//   | udp4 IP PORT | tcp6 IP PORT | unix P
// D is "." (the working directory, AT_FDCWD) or the index of a directory in
// the fixture's dirfd table, which the runner opens before the first request.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sv::differential {

enum class Kind {
  OpenRead,
  OpenPath,  // O_PATH: no access to the content, only a handle
  OpenWrite,
  Create,
  Unlink,
  Mkdir,
  Rmdir,
  Rename,
  Link,
  Exec,
  Tcp4,
  Udp4,
  Tcp6,
  Unix,
};

inline constexpr int kCwd = -1;  // AT_FDCWD

struct Request {
  Kind kind = Kind::OpenRead;
  int dir = kCwd;
  std::string path;  // for connects: the IP, or the unix socket path
  int dir2 = kCwd;
  std::string path2;
  int port = 0;
};

std::string_view kindName(Kind kind);
std::string format(const Request& request);
std::optional<Request> parse(std::string_view line);

inline bool isConnect(Kind k) {
  return k == Kind::Tcp4 || k == Kind::Udp4 || k == Kind::Tcp6 || k == Kind::Unix;
}

}  // namespace sv::differential
