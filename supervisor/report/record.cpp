// decodeLine(): the native, OCSF and ECS shapes of one audit record
// (docs/audit-events.md, "Other formats") into one Record. A line is
// attacker-influenced (paths, argv): every member is checked for its type,
// and a wrong type reads as absent, never as an error of the whole report.
// One pass of JsonScanner (json_scan.h) over the line keeps the members of
// all three formats that are read here; nothing else is copied.
#include "supervisor/report/record.h"

#include "supervisor/report/json_scan.h"

namespace sv::report {
namespace {

// Every member read below, in the order of kPaths.
enum Field : size_t {
  // native
  kSchemaVersion,
  kSessionId,
  kEventId,
  kSeq,
  kTime,
  kCategory,
  kOperation,
  kSessionCommand,
  kSessionExitCode,
  kSessionExitSignal,
  kDecision,
  kRuleId,
  kRuleReason,
  kProcessPid,
  kProcessPpid,
  kProcessComm,
  kProcessArgv,
  kFilePath,
  kExecPath,
  kNetworkUnixPath,
  kNetworkIp,
  kNetworkPort,
  // OCSF (file.path is shared)
  kMetaCorrelationUid,
  kMetaUid,
  kMetaSequence,
  kTimeDt,
  kUnmappedCategory,
  kUnmappedOperation,
  kUnmappedCommand,
  kUnmappedExitCode,
  kUnmappedExitSignal,
  kUnmappedDecision,
  kUnmappedRuleId,
  kUnmappedPolicyDesc,
  kFirewallRuleDesc,
  kActorPid,
  kActorParentPid,
  kActorName,
  kActorCmdLine,
  kProcessFilePath,
  kDstName,
  kDstIp,
  kDstPort,
  // ECS (file.path, rule.id, process.pid are shared)
  kLabelsSessionId,
  kEcs,
  kEcsEventId,
  kEventSequence,
  kTimestamp,
  kEventAction,
  kSuperviseCommand,
  kSuperviseExitCode,
  kSuperviseExitSignal,
  kSuperviseCategory,
  kSuperviseDecision,
  kRuleDescription,
  kProcessParentPid,
  kProcessName,
  kProcessArgs,
  kProcessExecutable,
  kDestAddress,
  kDestIp,
  kDestPort,
};

const FieldPaths kPaths{
    {{"schema_version"}},
    {{"session_id"}},
    {{"event_id"}},
    {{"seq"}},
    {{"time"}},
    {{"category"}},
    {{"operation"}},
    {{"session", "command"}, true},
    {{"session", "exit", "code"}},
    {{"session", "exit", "signal"}},
    {{"decision"}},
    {{"rule", "id"}},
    {{"rule", "reason"}},
    {{"process", "pid"}},
    {{"process", "ppid"}},
    {{"process", "comm"}},
    {{"process", "argv"}, true},
    {{"file", "path"}},
    {{"exec", "path"}},
    {{"network", "unix_path"}},
    {{"network", "ip"}},
    {{"network", "port"}},

    {{"metadata", "correlation_uid"}},
    {{"metadata", "uid"}},
    {{"metadata", "sequence"}},
    {{"time_dt"}},
    {{"unmapped", "category"}},
    {{"unmapped", "operation"}},
    {{"unmapped", "command"}, true},
    {{"unmapped", "exit_code"}},
    {{"unmapped", "exit_signal"}},
    {{"unmapped", "decision"}},
    {{"unmapped", "rule_id"}},
    {{"unmapped", "policy", "desc"}},
    {{"firewall_rule", "desc"}},
    {{"actor", "process", "pid"}},
    {{"actor", "process", "parent_process", "pid"}},
    {{"actor", "process", "name"}},
    {{"actor", "process", "cmd_line"}},
    {{"process", "file", "path"}},
    {{"dst_endpoint", "name"}},
    {{"dst_endpoint", "ip"}},
    {{"dst_endpoint", "port"}},

    {{"labels", "session_id"}},
    {{"ecs"}},
    {{"event", "id"}},
    {{"event", "sequence"}},
    {{"@timestamp"}},
    {{"event", "action"}},
    {{"supervise", "command"}, true},
    {{"supervise", "exit_code"}},
    {{"supervise", "exit_signal"}},
    {{"supervise", "category"}},
    {{"supervise", "decision"}},
    {{"rule", "description"}},
    {{"process", "parent", "pid"}},
    {{"process", "name"}},
    {{"process", "args"}, true},
    {{"process", "executable"}},
    {{"destination", "address"}},
    {{"destination", "ip"}},
    {{"destination", "port"}},
};

// The scanned line, read as the DOM decoder read its json: a member of the
// wrong type is absent.
class Line {
 public:
  explicit Line(const JsonScanner& s) : s_(s) {}
  bool has(Field f) const { return s_[f].type != FieldValue::kAbsent; }
  bool isString(Field f) const { return s_[f].type == FieldValue::kString; }
  std::string_view str(Field f) const { return isString(f) ? s_[f].text : std::string_view(); }
  bool isInteger(Field f) const { return s_[f].type == FieldValue::kInteger; }
  int64_t num(Field f, int64_t fallback = -1) const {
    return isInteger(f) ? s_[f].integer : fallback;
  }
  // An argv array's string elements joined by spaces; "" when not an array.
  std::string_view argv(Field f) const { return s_[f].array ? s_[f].text : std::string_view(); }

 private:
  const JsonScanner& s_;
};

void endpoint(const Line& l, Field ip, Field port, std::string* out) {
  if (!l.isString(ip)) return;
  const std::string_view host = l.str(ip);
  if (host.find(':') != std::string_view::npos) {
    *out += '[';
    *out += host;
    *out += ']';
  } else {
    *out = host;
  }
  if (l.isInteger(port)) *out += ":" + std::to_string(l.num(port));
}

void fillExit(const Line& l, Record* r, Field code, Field signal) {
  r->has_exit = true;
  r->exit_code = l.num(code);
  if (l.isString(signal))
    r->exit_signal = l.str(signal);
  else if (l.isInteger(signal) && l.num(signal) != 0)
    r->exit_signal = std::to_string(l.num(signal));
}

// A session record: its command (start) or exit (end), wherever the format
// keeps them.
void fillSession(const Line& l, Record* r, Field command, Field code, Field signal) {
  if (r->operation == "start") {
    r->kind = RecordKind::SessionStart;
    r->command = l.argv(command);
  } else if (r->operation == "end") {
    r->kind = RecordKind::SessionEnd;
    fillExit(l, r, code, signal);
  }
}

// Where a record is: its format, session, event id, seq and time as written.
void fillIdentity(const Line& l, Record* r, const char* format, Field session, Field event,
                  Field seq, Field time) {
  r->format = format;
  r->session_id = l.str(session);
  r->event_id = l.str(event);
  r->seq = static_cast<uint64_t>(l.num(seq, 0));
  r->time = l.str(time);
}

void decodeNative(const Line& l, Record* r) {
  fillIdentity(l, r, "native", kSessionId, kEventId, kSeq, kTime);
  r->time_ms = parseRfc3339Ms(r->time);
  r->category = l.str(kCategory);
  r->operation = l.str(kOperation);
  if (r->category == "session") {
    fillSession(l, r, kSessionCommand, kSessionExitCode, kSessionExitSignal);
    return;
  }
  r->decision = l.str(kDecision);
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = l.str(kRuleId);
  r->rule_reason = l.str(kRuleReason);
  r->pid = l.num(kProcessPid);
  r->ppid = l.num(kProcessPpid);
  r->comm = l.str(kProcessComm);
  r->command = l.argv(kProcessArgv);
  if (l.isString(kFilePath))
    r->target = l.str(kFilePath);
  else if (l.isString(kExecPath))
    r->target = l.str(kExecPath);
  else if (!l.str(kNetworkUnixPath).empty())
    r->target = l.str(kNetworkUnixPath);
  else
    endpoint(l, kNetworkIp, kNetworkPort, &r->target);
}

void decodeOcsf(const Line& l, Record* r) {
  fillIdentity(l, r, "ocsf", kMetaCorrelationUid, kMetaUid, kMetaSequence, kTimeDt);
  r->time_ms = l.num(kTime);
  if (r->time_ms < 0) r->time_ms = parseRfc3339Ms(r->time);
  r->category = l.str(kUnmappedCategory);
  r->operation = l.str(kUnmappedOperation);
  if (r->category == "session") {
    fillSession(l, r, kUnmappedCommand, kUnmappedExitCode, kUnmappedExitSignal);
    return;
  }
  r->decision = l.str(kUnmappedDecision);
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = l.str(kUnmappedRuleId);
  r->rule_reason = l.str(kUnmappedPolicyDesc);
  if (r->rule_reason.empty()) r->rule_reason = l.str(kFirewallRuleDesc);
  r->pid = l.num(kActorPid);
  r->ppid = l.num(kActorParentPid);
  r->comm = l.str(kActorName);
  r->command = l.str(kActorCmdLine);
  if (!l.str(kFilePath).empty())
    r->target = l.str(kFilePath);
  else if (!l.str(kProcessFilePath).empty())
    r->target = l.str(kProcessFilePath);  // exec: the new image
  else if (!l.str(kDstName).empty())
    r->target = l.str(kDstName);
  else
    endpoint(l, kDstIp, kDstPort, &r->target);
}

void decodeEcs(const Line& l, Record* r) {
  fillIdentity(l, r, "ecs", kLabelsSessionId, kEcsEventId, kEventSequence, kTimestamp);
  r->time_ms = parseRfc3339Ms(r->time);
  const std::string_view action = l.str(kEventAction);
  if (action.starts_with("session-")) {
    r->category = "session";
    r->operation = action.substr(8);
    fillSession(l, r, kSuperviseCommand, kSuperviseExitCode, kSuperviseExitSignal);
    return;
  }
  r->category = l.str(kSuperviseCategory);
  r->operation = action;
  r->decision = l.str(kSuperviseDecision);
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = l.str(kRuleId);
  r->rule_reason = l.str(kRuleDescription);
  r->pid = l.num(kProcessPid);
  r->ppid = l.num(kProcessParentPid);
  r->comm = l.str(kProcessName);
  r->command = l.argv(kProcessArgs);
  if (!l.str(kFilePath).empty())
    r->target = l.str(kFilePath);
  else if (r->category == "exec" || (r->category == "process" && action == "exec"))
    r->target = l.str(kProcessExecutable);  // the new image
  else if (!l.str(kDestAddress).empty() && !l.has(kDestIp))
    r->target = l.str(kDestAddress);  // unix socket
  else
    endpoint(l, kDestIp, kDestPort, &r->target);
}

// Record{} without giving back the strings' memory (the next line reuses it).
void clear(Record* r) {
  r->kind = RecordKind::Other;
  for (std::string* s : {&r->format, &r->session_id, &r->event_id, &r->time, &r->category,
                         &r->operation, &r->decision, &r->rule_id, &r->rule_reason, &r->target,
                         &r->comm, &r->command, &r->exit_signal})
    clearForReuse(s);
  r->seq = 0;
  r->time_ms = -1;
  r->pid = r->ppid = -1;
  r->has_exit = false;
  r->exit_code = -1;
}

}  // namespace

int64_t parseRfc3339Ms(std::string_view t) {
  // YYYY-MM-DDTHH:MM:SS[.fraction]Z
  auto digits = [&](size_t pos, size_t n, int* out) {
    if (pos + n > t.size()) return false;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    *out = v;
    return true;
  };
  int year, mon, day, hour, min, sec;
  if (t.size() < 20 || !digits(0, 4, &year) || t[4] != '-' || !digits(5, 2, &mon) || t[7] != '-' ||
      !digits(8, 2, &day) || (t[10] != 'T' && t[10] != ' ') || !digits(11, 2, &hour) ||
      t[13] != ':' || !digits(14, 2, &min) || t[16] != ':' || !digits(17, 2, &sec) || mon < 1 ||
      mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
    return -1;
  int ms = 0;
  size_t i = 19;
  if (i < t.size() && t[i] == '.') {
    int scale = 100;
    for (++i; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
      ms += (t[i] - '0') * scale;
      scale /= 10;
    }
  }
  if (i >= t.size() || t[i] != 'Z') return -1;
  // timegm() without its time-zone machinery (days from the civil date,
  // H. Hinnant's algorithm); a day past the month's end runs on into the
  // next, as timegm() normalizes it.
  int64_t y = year - (mon <= 2);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (mon + (mon > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
  return ((days * 24 + hour) * 60 + min) * 60000 + sec * 1000 + ms;
}

bool decodeLine(std::string_view text, Record* out, std::string* why) {
  clear(out);
  thread_local JsonScanner scanner(kPaths);
  const ScanResult result = scanner.scan(text);
  if (result == ScanResult::kInvalid) {
    *why = "not JSON";
    return false;
  }
  if (result == ScanResult::kNotObject) {
    *why = "not a JSON object";
    return false;
  }
  const Line l(scanner);
  if (l.has(kSchemaVersion) && l.has(kSessionId)) {
    decodeNative(l, out);
  } else if (l.has(kMetaCorrelationUid)) {
    decodeOcsf(l, out);
  } else if (l.has(kLabelsSessionId) && l.has(kEcs)) {
    decodeEcs(l, out);
  } else {
    *why = "not an audit record of the native, OCSF or ECS format";
    return false;
  }
  if (out->session_id.empty()) {
    *why = "no session id";
    return false;
  }
  return true;
}

}  // namespace sv::report
