// RFC 5424 message framing: see syslog_frame.h.
#include "supervisor/audit/sinks/syslog_frame.h"

#include <charconv>

namespace sv::supervisor::audit {
namespace {

void appendNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, size_t(r.ptr - buf));
}

// HOSTNAME / APP-NAME / MSGID: printable US-ASCII without spaces, or "-".
void appendToken(std::string& out, std::string_view s, size_t max) {
  size_t n = 0;
  for (char c : s) {
    if (n == max) break;
    out += (c > 32 && c < 127) ? c : '_';
    ++n;
  }
  if (n == 0) out += '-';
}

// PARAM-VALUE: '"', '\' and ']' are escaped (RFC 5424 6.3.3).
void appendParam(std::string& out, std::string_view name, std::string_view value) {
  out += ' ';
  out.append(name);
  out += "=\"";
  for (char c : value) {
    if (c == '"' || c == '\\' || c == ']') out += '\\';
    out += c;
  }
  out += '"';
}

void appendParam(std::string& out, std::string_view name, uint64_t value) {
  out += ' ';
  out.append(name);
  out += "=\"";
  appendNumber(out, value);
  out += '"';
}

void appendTimestamp(std::string& out, timespec time) {
  struct tm tm {};
  gmtime_r(&time.tv_sec, &tm);
  char buf[40];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  out.append(buf, n);
  char frac[8] = {'.'};
  long us = time.tv_nsec / 1000;
  for (int i = 6; i >= 1; --i, us /= 10) frac[i] = char('0' + us % 10);
  out.append(frac, 7);
  out += 'Z';
}

}  // namespace

void appendSyslog(std::string& out, bool octet_counting, timespec time, const SyslogFields& f,
                  std::string_view json) {
  // The length prefix needs the message length: write the message, then
  // insert its length in front (one memmove of this message, no allocation
  // once `out` is warm).
  const size_t start = out.size();
  out += '<';
  appendNumber(out, uint64_t(kSyslogFacilityAudit * 8 + f.severity));
  out += ">1 ";
  appendTimestamp(out, time);
  out += ' ';
  appendToken(out, f.host, 255);
  out += " supervise ";
  appendNumber(out, uint64_t(f.procid));
  out += ' ';
  appendToken(out, f.msgid, 32);
  out += " [";
  out.append(kSyslogSdId);
  if (f.seq) appendParam(out, "seq", f.seq);
  appendParam(out, "session", f.session_id);
  if (f.seq) {
    if (!f.operation.empty()) appendParam(out, "operation", f.operation);
    if (!f.decision.empty()) appendParam(out, "decision", f.decision);
    if (!f.rule_id.empty()) appendParam(out, "rule", f.rule_id);
    if (f.pid > 0) appendParam(out, "pid", uint64_t(f.pid));
  } else {
    appendParam(out, "dropped", f.dropped);
    appendParam(out, "first", f.dropped_first);
    appendParam(out, "last", f.dropped_last);
  }
  out += "] ";
  out.append(json);
  if (octet_counting) {
    char len[24];
    auto r = std::to_chars(len, len + sizeof len - 1, out.size() - start);
    *r.ptr++ = ' ';
    out.insert(start, len, size_t(r.ptr - len));
  }
}

}  // namespace sv::supervisor::audit
