// Text form of a Request (see request.h): the one format the generator
// writes, the runner reads and the test prints differences in.
#include "tests/differential/request.h"

#include <array>
#include <charconv>
#include <utility>
#include <vector>

namespace sv::differential {
namespace {

constexpr std::array<std::pair<Kind, std::string_view>, 14> kNames = {{
    {Kind::OpenRead, "open-read"},
    {Kind::OpenPath, "open-path"},
    {Kind::OpenWrite, "open-write"},
    {Kind::Create, "create"},
    {Kind::Unlink, "unlink"},
    {Kind::Mkdir, "mkdir"},
    {Kind::Rmdir, "rmdir"},
    {Kind::Rename, "rename"},
    {Kind::Link, "link"},
    {Kind::Exec, "exec"},
    {Kind::Tcp4, "tcp4"},
    {Kind::Udp4, "udp4"},
    {Kind::Tcp6, "tcp6"},
    {Kind::Unix, "unix"},
}};

std::string dirText(int dir) { return dir == kCwd ? "." : std::to_string(dir); }

std::optional<int> parseInt(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int> parseDir(std::string_view s) {
  if (s == ".") return kCwd;
  return parseInt(s);
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  while (!line.empty()) {
    const size_t sp = line.find(' ');
    out.push_back(line.substr(0, sp));
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  return out;
}

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
    case Kind::Tcp4:
    case Kind::Udp4:
    case Kind::Tcp6:
      return s + " " + r.path + " " + std::to_string(r.port);
    default:
      return s + " " + dirText(r.dir) + " " + r.path;
  }
}

std::optional<Request> parse(std::string_view line) {
  const auto f = fields(line);
  if (f.empty()) return std::nullopt;
  Request r;
  bool known = false;
  for (const auto& [k, name] : kNames)
    if (name == f[0]) r.kind = k, known = true;
  if (!known) return std::nullopt;
  switch (r.kind) {
    case Kind::Rename:
    case Kind::Link: {
      if (f.size() != 5) return std::nullopt;
      auto d = parseDir(f[1]), d2 = parseDir(f[3]);
      if (!d || !d2) return std::nullopt;
      r.dir = *d, r.path = f[2], r.dir2 = *d2, r.path2 = f[4];
      return r;
    }
    case Kind::Exec:
    case Kind::Unix:
      if (f.size() != 2) return std::nullopt;
      r.path = f[1];
      return r;
    case Kind::Tcp4:
    case Kind::Udp4:
    case Kind::Tcp6: {
      if (f.size() != 3) return std::nullopt;
      auto port = parseInt(f[2]);
      if (!port) return std::nullopt;
      r.path = f[1], r.port = *port;
      return r;
    }
    default: {
      if (f.size() != 3) return std::nullopt;
      auto d = parseDir(f[1]);
      if (!d) return std::nullopt;
      r.dir = *d, r.path = f[2];
      return r;
    }
  }
}

}  // namespace sv::differential
