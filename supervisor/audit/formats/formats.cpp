// Format dispatch and the helpers the OCSF and ECS encoders share.
#include "supervisor/audit/formats/formats.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "supervisor/audit/formats/encode_util.h"

namespace sv::supervisor {

std::optional<AuditFormat> parseAuditFormat(std::string_view name) {
  if (name == "native") return AuditFormat::Native;
  if (name == "ocsf") return AuditFormat::Ocsf;
  if (name == "ecs") return AuditFormat::Ecs;
  return std::nullopt;
}

void encodeEventAs(AuditFormat format, std::string& out, const AuditEvent& event,
                   const SessionInfo& session, uint64_t seq, timespec time) {
  switch (format) {
    case AuditFormat::Ocsf: return encodeOcsfTo(out, event, session, seq, time);
    case AuditFormat::Ecs: return encodeEcsTo(out, event, session, seq, time);
    case AuditFormat::Native: break;
  }
  encodeEventTo(out, event, session, seq, time);
}

std::string encodeDroppedAs(AuditFormat format, const SessionInfo& session, timespec time,
                            uint64_t count, uint64_t first_seq, uint64_t last_seq,
                            uint64_t total) {
  if (format == AuditFormat::Native)
    return encodeDropped(session, time, count, first_seq, last_seq, total);
  AuditEvent e;
  e.category = "session";
  e.operation = "dropped";
  e.session.dropped_count = count;
  e.session.dropped_first = first_seq;
  e.session.dropped_last = last_seq;
  e.session.dropped_total = total;
  std::string out;
  encodeEventAs(format, out, e, session, 0, time);
  return out;
}

uint64_t recordSeq(AuditFormat format, std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return 0;
  const char* outer = format == AuditFormat::Ocsf  ? "metadata"
                      : format == AuditFormat::Ecs ? "event"
                                                   : nullptr;
  const nlohmann::json* holder = &j;
  if (outer) {
    auto it = j.find(outer);
    if (it == j.end() || !it->is_object()) return 0;
    holder = &*it;
  }
  auto seq = holder->find(outer ? "sequence" : "seq");
  return seq != holder->end() && seq->is_number_unsigned() ? seq->get<uint64_t>() : 0;
}

std::string_view baseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

void writeJoined(JsonWriter& w, EventText& text, const std::vector<std::string>& argv) {
  w.beginString();
  bool first = true;
  text.forEachArg(argv, [&](std::string_view arg) {
    if (!first) w.stringPiece(" ");
    first = false;
    w.stringPiece(arg);
  });
  w.endString();
}

void writeSessionDetails(JsonWriter& w, EventText& text, const AuditEvent& e) {
  if (e.category != "session") return;
  if (e.operation == "start") {
    putArgv(w, text, "command", e.session.command);
    writeSelfProtected(w, text, e.session.self_protected);
    writeEnvironment(w, e.session.environment);
  }
  if (e.operation == "reload") putString(w, "policy_sha256", e.session.policy_sha256);
  if (e.session.has_exit) {
    w.memberNumber("exit_code", e.session.exit.code);
    w.memberNumber("exit_signal", e.session.exit.signal);
  }
  const auto counter = [&](std::string_view key, uint64_t v) {
    w.key(key);
    w.unsignedNumber(v);
  };
  if (e.session.has_counters) {
    w.key("counters");
    w.beginObject();
    counter("decisions", e.session.counters.decisions);
    counter("denials", e.session.counters.denials);
    counter("would_deny", e.session.counters.would_deny);
    counter("dropped", e.session.counters.dropped);
    counter("unrecorded", e.session.counters.unrecorded);
    w.endObject();
  }
  if (e.operation == "dropped") {
    w.key("dropped");
    w.beginObject();
    counter("count", e.session.dropped_count);
    counter("first_seq", e.session.dropped_first);
    counter("last_seq", e.session.dropped_last);
    counter("total", e.session.dropped_total);
    w.endObject();
  }
}

void writeSchemaMarker(JsonWriter& w) {
  w.key("schema");
  w.beginString();
  w.stringPiece("supervise-");
  w.stringPiece(kAuditSchemaVersion);
  w.endString();
}

void writeDaemonRequest(JsonWriter& w, const SessionInfo& session) {
  if (session.command_id.empty()) return;
  putString(w, "command_id", session.command_id);
  w.key("client");
  w.beginObject();
  w.memberNumber("pid", session.client_pid);
  w.memberNumber("uid", session.client_uid);
  w.endObject();
}

void writeIdString(JsonWriter& w, uint32_t id) {
  if (id == ProcessInfo::kUnknownId) return w.null();
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, id);
  w.string(std::string_view(buf, size_t(r.ptr - buf)));
}

void writeTimeMillis(JsonWriter& w, timespec time) {
  char buf[kRfc3339Size];
  const size_t n = formatRfc3339To(buf, time);  // ...SS.nnnnnnnnnZ
  buf[n - 7] = 'Z';
  w.string(std::string_view(buf, n - 6));
}

void ExactBytes::putArgv(JsonWriter& w, EventText& text, std::string_view key,
                         std::string_view path, const std::vector<std::string>& argv) {
  w.key(key);
  w.beginArray();
  bool all_valid = true;
  text.forEachArg(argv, [&](std::string_view a) { all_valid &= w.string(a); });
  w.endArray();
  if (!all_valid) remember(path, {}, &argv);
}

void ExactBytes::writeTo(JsonWriter& w, EventText& text) const {
  if (n_ == 0) return;
  w.key("b64");
  w.beginObject();
  for (size_t i = 0; i < n_; ++i) {
    const Entry& e = entries_[i];
    w.key(e.path);
    if (!e.argv) {
      writeBase64(w, e.value);
      continue;
    }
    w.beginArray();
    text.forEachArg(*e.argv, [&](std::string_view a) { writeBase64(w, a); });
    w.endArray();
  }
  w.endObject();
}

}  // namespace sv::supervisor
