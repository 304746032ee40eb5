// One request of the differential test: a single syscall the runner program
// (run_requests.c) makes and the engine is asked about. Requests travel as
// text, one per line, so the runner needs no C++ and a failing request can be
// copied from the test output into a file and replayed by hand.
//
// Line format (fields separated by one space; paths never hold spaces):
//   open-read D P | open-path D P | open-write D P | create D P | chmod D P
//   unlink D P | mkdir D P | rmdir D P | symlink D P TARGET
//   rename D P D2 P2 | link D P D2 P2
//   exec P
//   tcp4 IP PORT | udp4 IP PORT | udp4-send IP PORT | tcp6 IP PORT | unix P
// D is "." (the working directory, AT_FDCWD) or the index of a directory in
// the fixture's dirfd table, which the runner opens before the first request.
// connect() for tcp4, udp4, tcp6 and unix; one sendto() for udp4-send.
#pragma once

#include <string>
#include <string_view>

namespace sv::differential {

enum class Kind {
  OpenRead,
  OpenPath,  // O_PATH: no access to the content, only a handle
  OpenWrite,
  Create,
  Chmod,  // to 0644, the fixture files' own mode
  Unlink,
  Mkdir,
  Rmdir,
  Symlink,  // path2: the link's target text
  Rename,
  Link,
  Exec,
  Tcp4,
  Udp4,
  Udp4Send,
  Tcp6,
  Unix,
};

inline constexpr int kCwd = -1;  // AT_FDCWD

struct Request {
  Kind kind = Kind::OpenRead;
  int dir = kCwd;
  std::string path;  // for connects: the IP, or the unix socket path
  int dir2 = kCwd;
  std::string path2;  // rename/link: the new name; symlink: the target text
  int port = 0;
};

std::string_view kindName(Kind kind);
std::string format(const Request& request);

}  // namespace sv::differential
