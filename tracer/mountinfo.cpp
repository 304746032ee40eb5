// mountinfo snapshot, parser and private mount namespace; see mountinfo.h.
#include "tracer/mountinfo.h"

#include <sched.h>
#include <sys/mount.h>

#include "common/read_file.h"

namespace sv::tracer {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeMountField(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t j) { return s[j] >= '0' && s[j] <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The next space-separated field of `rest`, which is advanced past it.
std::string_view nextField(std::string_view& rest) {
  const size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return rest = {};
  rest.remove_prefix(start);
  const size_t end = rest.find(' ');
  const std::string_view field = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  return field;
}

}  // namespace

namespace {

// The snapshot and the fd it was read from, kept open: a poll of that fd
// reports POLLPRI once the mount table changed since (mounts_poll).
struct Snapshot {
  UniqueFd fd;
  std::string text;
};

const Snapshot& snapshot() {
  static const Snapshot s = [] {
    Snapshot s;
    s.fd.reset(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    if (s.fd)
      if (auto text = readAllFrom(s.fd.get())) s.text = std::move(*text);
    return s;
  }();
  return s;
}

}  // namespace

const std::string& mountinfoOnce() { return snapshot().text; }

int mountinfoOnceFd() { return snapshot().fd.get(); }

Result<std::string> mountinfoNow() { return readWholeFile("/proc/self/mountinfo"); }

std::optional<MountEntry> findMountEntry(std::string_view mountinfo, std::string_view fstype,
                                         const std::function<bool(const MountEntry&)>& accept) {
  std::string_view rest = mountinfo;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const size_t sep = line.find(" - ");
    if (sep == std::string_view::npos) continue;
    std::string_view tail = line.substr(sep + 3);
    const std::string_view type = nextField(tail);
    if (type != fstype) continue;
    nextField(tail);  // source
    std::string_view head = line.substr(0, sep);
    for (int skip = 0; skip < 3; ++skip) nextField(head);  // id parent major:minor
    const std::string_view root = nextField(head);
    const std::string_view mount_point = nextField(head);
    MountEntry e{unescapeMountField(root), unescapeMountField(mount_point), std::string(type),
                 std::string(nextField(tail))};
    if (!accept || accept(e)) return e;
  }
  return std::nullopt;
}

Status enterPrivateMountNamespace() {
  if (::unshare(CLONE_NEWNS) != 0) return errnoError("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    return errnoError("mount --make-rslave /");
  return {};
}

}  // namespace sv::tracer
