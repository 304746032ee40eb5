// Text form of a Request (see request.h): the one format the generator
// writes, the runner reads (run_requests.c parses it) and the test prints
// differences in.
#include "tests/differential/request.h"

#include <array>
#include <utility>

namespace sv::differential {
namespace {

constexpr std::array<std::pair<Kind, std::string_view>, 17> kNames = {{
    {Kind::OpenRead, "open-read"},
    {Kind::OpenPath, "open-path"},
    {Kind::OpenWrite, "open-write"},
    {Kind::Create, "create"},
    {Kind::Chmod, "chmod"},
    {Kind::Unlink, "unlink"},
    {Kind::Mkdir, "mkdir"},
    {Kind::Rmdir, "rmdir"},
    {Kind::Symlink, "symlink"},
    {Kind::Rename, "rename"},
    {Kind::Link, "link"},
    {Kind::Exec, "exec"},
    {Kind::Tcp4, "tcp4"},
    {Kind::Udp4, "udp4"},
    {Kind::Udp4Send, "udp4-send"},
    {Kind::Tcp6, "tcp6"},
    {Kind::Unix, "unix"},
}};

std::string dirText(int dir) { return dir == kCwd ? "." : std::to_string(dir); }

}  // namespace

std::string_view kindName(Kind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "?";
}

std::string format(const Request& r) {
  std::string s(kindName(r.kind));
  switch (r.kind) {
    case Kind::Rename:
    case Kind::Link:
      return s + " " + dirText(r.dir) + " " + r.path + " " + dirText(r.dir2) + " " + r.path2;
    case Kind::Exec:
    case Kind::Unix:
      return s + " " + r.path;
    case Kind::Symlink:
      return s + " " + dirText(r.dir) + " " + r.path + " " + r.path2;
    case Kind::Tcp4:
    case Kind::Udp4:
    case Kind::Udp4Send:
    case Kind::Tcp6:
      return s + " " + r.path + " " + std::to_string(r.port);
    default:
      return s + " " + dirText(r.dir) + " " + r.path;
  }
}

}  // namespace sv::differential
