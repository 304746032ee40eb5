// runCaptured(): see captured_run.h.
#include "supervisor/agent/captured_run.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/unique_fd.h"

namespace sv::supervisor::agent {
namespace {

// After the command's end, how long the pipes may stay open. The session
// kills its whole cgroup when the command exits, so EOF follows at once;
// the wait is only for a process that got out of it.
constexpr std::chrono::milliseconds kDrainAfterExit{2000};
// printDenial() writes at most 8 KiB per line: a longer "line" is output.
constexpr size_t kMaxDenialLine = 8192;

constexpr std::string_view kActions[] = {"denied ", "would deny ", "killed for ", "killed ",
                                         "would kill "};

// Reads both pipes until EOF on each or until `stop_at` (steady clock ns,
// 0 = not yet set) passes.
class Drain {
 public:
  Drain(UniqueFd out, UniqueFd err, size_t max_bytes)
      : fds_{std::move(out), std::move(err)}, max_(max_bytes) {}

  void run(const std::atomic<int64_t>& stop_at, CapturedRun& into) {
    CapturedStream* streams[2] = {&into.out, &into.err};
    while (fds_[0] || fds_[1]) {
      const int64_t stop = stop_at.load();
      const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
      if (stop != 0 && now >= stop) {
        into.output_unfinished = true;
        break;
      }
      pollfd p[2] = {{fds_[0].get(), POLLIN, 0}, {fds_[1].get(), POLLIN, 0}};
      // Wakes up now and then to see whether the command ended.
      if (::poll(p, 2, 50) < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[65536];
        const ssize_t n = ::read(fds_[i].get(), buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
          fds_[i].reset();
          continue;
        }
        if (n < 0) continue;
        const std::string_view chunk(buf, size_t(n));
        keep(*streams[i], chunk);
        if (i == 1) scanDenials(chunk, into);
      }
    }
    if (!partial_.empty()) lineDone(into);
  }

 private:
  void keep(CapturedStream& s, std::string_view chunk) const {
    const size_t room = max_ > s.bytes.size() ? max_ - s.bytes.size() : 0;
    s.bytes.append(chunk.substr(0, room));
    s.dropped += chunk.size() > room ? chunk.size() - room : 0;
  }

  void scanDenials(std::string_view chunk, CapturedRun& into) {
    for (char c : chunk) {
      if (c == '\n') {
        lineDone(into);
      } else if (partial_.size() < kMaxDenialLine) {
        partial_ += c;
      } else {
        too_long_ = true;
      }
    }
  }

  void lineDone(CapturedRun& into) {
    if (!too_long_) {
      if (auto d = parseDenialLine(partial_)) {
        if (into.denials.size() < kMaxDenials)
          into.denials.push_back(std::move(*d));
        else
          ++into.denials_dropped;
      }
    }
    partial_.clear();
    too_long_ = false;
  }

  UniqueFd fds_[2];
  size_t max_;
  std::string partial_;
  bool too_long_ = false;
};

Result<std::pair<UniqueFd, UniqueFd>> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errnoError("pipe2");
  return std::pair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

std::optional<Denial> parseDenialLine(std::string_view line) {
  constexpr std::string_view kPrefix = "supervise: ";
  constexpr std::string_view kEvent = " [event ";
  // "... (rule ID: reason) [event SESSION:SEQ]": the audit event, when one was written.
  std::string event_id;
  if (line.ends_with("]")) {
    const size_t at = line.rfind(kEvent);
    if (at == std::string_view::npos) return std::nullopt;
    event_id = std::string(line.substr(at + kEvent.size(), line.size() - at - kEvent.size() - 1));
    line = line.substr(0, at);
  }
  if (!line.starts_with(kPrefix) || !line.ends_with(")")) return std::nullopt;
  line.remove_prefix(kPrefix.size());
  Denial d;
  for (std::string_view action : kActions) {
    if (!line.starts_with(action)) continue;
    d.action = std::string(action.substr(0, action.size() - 1));
    line.remove_prefix(action.size());
    break;
  }
  if (d.action.empty()) return std::nullopt;
  // The target may hold " (rule " itself (a path can): the rule is the last one.
  const size_t rule = line.rfind(" (rule ");
  if (rule == std::string_view::npos || rule == 0) return std::nullopt;
  d.what = std::string(line.substr(0, rule));
  std::string_view rest = line.substr(rule + 7, line.size() - rule - 8);  // inside "(rule …)"
  const size_t colon = rest.find(": ");
  d.rule_id = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) d.reason = std::string(rest.substr(colon + 2));
  if (d.rule_id.empty() || d.rule_id.find(' ') != std::string::npos) return std::nullopt;
  d.line = "supervise: " + d.action + " " + d.what + " (rule " + std::string(rest) + ")";
  d.event_id = std::move(event_id);
  if (!d.event_id.empty()) d.line += " [event " + d.event_id + "]";
  return d;
}

Result<CapturedRun> runCaptured(const std::string& socket_path, const serve::ExecRequest& request,
                                size_t max_bytes_per_stream, int cancel_fd) {
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return errnoError("open /dev/null");
  auto out = makePipe();
  if (!out) return out.error();
  auto err = makePipe();
  if (!err) return err.error();

  CapturedRun run;
  std::atomic<int64_t> stop_at{0};
  Drain drain(std::move(out->first), std::move(err->first), max_bytes_per_stream);
  std::thread reader([&] { drain.run(stop_at, run); });

  const int stdio[3] = {null.get(), out->second.get(), err->second.get()};
  auto outcome =
      serve::execThroughDaemon(socket_path, request, stdio, /*forward_signals=*/false, cancel_fd);
  // Our write ends go: the reader sees EOF once the daemon's copies are gone too.
  out->second.reset();
  err->second.reset();
  stop_at = (std::chrono::steady_clock::now() + kDrainAfterExit).time_since_epoch().count();
  reader.join();
  if (!outcome) return outcome.error();
  run.outcome = std::move(*outcome);
  return run;
}

}  // namespace sv::supervisor::agent
