// The decoder `supervise report` had before RapidJSON, simdjson and the
// hand-written scanner: each line parsed into an nlohmann
// DOM and looked up. Kept as the reference decodeLine() is checked against
// (report_unit_test, report_fuzz): both must accept the same lines and give
// the same Record (decodeLineExpected() is this decoder now).
#include "tests/unit/report/dom_decoder.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace sv::report::testing {
namespace {

using nlohmann::json;

const json* at(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string str(const json& j, std::initializer_list<const char*> path) {
  const json* v = at(j, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t num(const json& j, std::initializer_list<const char*> path, int64_t fallback = -1) {
  const json* v = at(j, path);
  if (v && v->is_number_integer()) return v->get<int64_t>();
  if (v && v->is_number_unsigned()) return static_cast<int64_t>(v->get<uint64_t>());
  return fallback;
}

std::string joinArgv(const json* argv) {
  std::string out;
  if (!argv || !argv->is_array()) return out;
  for (const json& a : *argv) {
    if (!a.is_string()) continue;
    if (!out.empty()) out += ' ';
    out += a.get_ref<const std::string&>();
  }
  return out;
}

std::string endpoint(const json* ip, const json* port) {
  if (!ip || !ip->is_string()) return "";
  std::string host = ip->get<std::string>();
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  if (port && port->is_number_integer()) host += ":" + std::to_string(port->get<int64_t>());
  return host;
}

std::string signalText(const json* v) {
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number_integer() && v->get<int64_t>() != 0) return std::to_string(v->get<int64_t>());
  return "";
}

void fillExit(Record* r, const json* code, const json* signal) {
  r->has_exit = true;
  r->exit_code = code && code->is_number_integer() ? code->get<int64_t>() : -1;
  r->exit_signal = signalText(signal);
}

// A session record: its command (start) or exit (end), wherever the format
// keeps them.
void fillSession(Record* r, const json* command, const json* code, const json* signal) {
  if (r->operation == "start") {
    r->kind = RecordKind::SessionStart;
    r->command = joinArgv(command);
  } else if (r->operation == "end") {
    r->kind = RecordKind::SessionEnd;
    fillExit(r, code, signal);
  }
}

void decodeNative(const json& j, Record* r) {
  r->format = "native";
  r->session_id = str(j, {"session_id"});
  r->event_id = str(j, {"event_id"});
  r->seq = static_cast<uint64_t>(num(j, {"seq"}, 0));
  r->time = str(j, {"time"});
  r->time_ms = parseRfc3339Ms(r->time);
  r->category = str(j, {"category"});
  r->operation = str(j, {"operation"});
  if (r->category == "session") {
    fillSession(r, at(j, {"session", "command"}), at(j, {"session", "exit", "code"}),
                at(j, {"session", "exit", "signal"}));
    return;
  }
  r->decision = str(j, {"decision"});
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = str(j, {"rule", "id"});
  r->rule_reason = str(j, {"rule", "reason"});
  r->pid = num(j, {"process", "pid"});
  r->ppid = num(j, {"process", "ppid"});
  r->comm = str(j, {"process", "comm"});
  r->command = joinArgv(at(j, {"process", "argv"}));
  if (const json* f = at(j, {"file", "path"}); f && f->is_string())
    r->target = f->get<std::string>();
  else if (const json* e = at(j, {"exec", "path"}); e && e->is_string())
    r->target = e->get<std::string>();
  else if (std::string u = str(j, {"network", "unix_path"}); !u.empty())
    r->target = u;
  else
    r->target = endpoint(at(j, {"network", "ip"}), at(j, {"network", "port"}));
}

void decodeOcsf(const json& j, Record* r) {
  r->format = "ocsf";
  r->session_id = str(j, {"metadata", "correlation_uid"});
  r->event_id = str(j, {"metadata", "uid"});
  r->seq = static_cast<uint64_t>(num(j, {"metadata", "sequence"}, 0));
  r->time = str(j, {"time_dt"});
  r->time_ms = num(j, {"time"});
  if (r->time_ms < 0) r->time_ms = parseRfc3339Ms(r->time);
  r->category = str(j, {"unmapped", "category"});
  r->operation = str(j, {"unmapped", "operation"});
  if (r->category == "session") {
    fillSession(r, at(j, {"unmapped", "command"}), at(j, {"unmapped", "exit_code"}),
                at(j, {"unmapped", "exit_signal"}));
    return;
  }
  r->decision = str(j, {"unmapped", "decision"});
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = str(j, {"unmapped", "rule_id"});
  r->rule_reason = str(j, {"unmapped", "policy", "desc"});
  if (r->rule_reason.empty()) r->rule_reason = str(j, {"firewall_rule", "desc"});
  r->pid = num(j, {"actor", "process", "pid"});
  r->ppid = num(j, {"actor", "process", "parent_process", "pid"});
  r->comm = str(j, {"actor", "process", "name"});
  r->command = str(j, {"actor", "process", "cmd_line"});
  if (std::string p = str(j, {"file", "path"}); !p.empty())
    r->target = p;
  else if (std::string e = str(j, {"process", "file", "path"}); !e.empty())
    r->target = e;  // exec: the new image
  else if (std::string u = str(j, {"dst_endpoint", "name"}); !u.empty())
    r->target = u;
  else
    r->target = endpoint(at(j, {"dst_endpoint", "ip"}), at(j, {"dst_endpoint", "port"}));
}

void decodeEcs(const json& j, Record* r) {
  r->format = "ecs";
  r->session_id = str(j, {"labels", "session_id"});
  r->event_id = str(j, {"event", "id"});
  r->seq = static_cast<uint64_t>(num(j, {"event", "sequence"}, 0));
  r->time = str(j, {"@timestamp"});
  r->time_ms = parseRfc3339Ms(r->time);
  const std::string action = str(j, {"event", "action"});
  if (action.starts_with("session-")) {
    r->category = "session";
    r->operation = action.substr(8);
    fillSession(r, at(j, {"supervise", "command"}), at(j, {"supervise", "exit_code"}),
                at(j, {"supervise", "exit_signal"}));
    return;
  }
  r->category = str(j, {"supervise", "category"});
  r->operation = action;
  r->decision = str(j, {"supervise", "decision"});
  if (r->decision.empty()) return;
  r->kind = RecordKind::Decision;
  r->rule_id = str(j, {"rule", "id"});
  r->rule_reason = str(j, {"rule", "description"});
  r->pid = num(j, {"process", "pid"});
  r->ppid = num(j, {"process", "parent", "pid"});
  r->comm = str(j, {"process", "name"});
  r->command = joinArgv(at(j, {"process", "args"}));
  if (std::string p = str(j, {"file", "path"}); !p.empty())
    r->target = p;
  else if (r->category == "exec" || (r->category == "process" && action == "exec"))
    r->target = str(j, {"process", "executable"});  // the new image
  else if (std::string a = str(j, {"destination", "address"});
           !a.empty() && !at(j, {"destination", "ip"}))
    r->target = a;  // unix socket
  else
    r->target = endpoint(at(j, {"destination", "ip"}), at(j, {"destination", "port"}));
}

}  // namespace

bool decodeLineDom(std::string_view line, Record* out, std::string* why, DuplicateKeys keys) {
  *out = Record{};
  // kFirst: the parser callback drops a key (and its value) already seen in
  // its object. The keys of the object opened at depth d come at depth d + 1;
  // a new object at depth d starts its set afresh.
  std::vector<std::set<std::string>> seen;
  json::parser_callback_t first = [&](int depth, json::parse_event_t event, json& parsed) {
    const size_t d = static_cast<size_t>(depth);
    if (event == json::parse_event_t::object_start) {
      if (seen.size() <= d) seen.resize(d + 1);
      seen[d].clear();
    } else if (event == json::parse_event_t::key && d > 0 && d <= seen.size()) {
      return seen[d - 1].insert(parsed.get<std::string>()).second;
    }
    return true;
  };
  json j = json::parse(line.begin(), line.end(), keys == DuplicateKeys::kFirst ? first : nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *why = "not JSON";
    return false;
  }
  if (!j.is_object()) {
    *why = "not a JSON object";
    return false;
  }
  if (j.contains("schema_version") && j.contains("session_id")) {
    decodeNative(j, out);
  } else if (at(j, {"metadata", "correlation_uid"})) {
    decodeOcsf(j, out);
  } else if (at(j, {"labels", "session_id"}) && j.contains("ecs")) {
    decodeEcs(j, out);
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

namespace {

// One nlohmann SAX pass that notes what simdjson read differently (the
// tests check RapidJSON reads those lines as nlohmann).
// Depth as simdjson's stage 2 counts it (measured on 3.0.1, tested in
// dom_diff_test.cpp): a container's level is checked when it gets its first
// element, so 1024 nested empty arrays pass and a non-empty one at level
// 1024 is too deep.
class DifferenceFinder : public nlohmann::json_sax<json> {
 public:
  Differences found;
  bool null() override { return element(); }
  bool boolean(bool) override { return element(); }
  bool number_integer(number_integer_t) override { return element(); }
  bool number_unsigned(number_unsigned_t) override { return element(); }
  bool number_float(number_float_t, const string_t& text) override {
    // nlohmann makes an integer too big for 64 bits a double.
    if (text.find_first_of(".eE") == std::string::npos) found.big_integer = true;
    return element();
  }
  bool string(string_t&) override { return element(); }
  bool binary(binary_t&) override { return element(); }
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override {
    // An audit object has a few dozen keys: a linear search beats a set's
    // allocations.
    std::vector<std::string>& keys = containers_.back().keys;
    if (std::find(keys.begin(), keys.end(), k) != keys.end())
      found.duplicate_keys = true;
    else
      keys.push_back(k);
    return element();
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Container {
    bool object;
    bool empty = true;
    std::vector<std::string> keys;
  };
  // A value or key: its container is not empty. An object's value follows
  // its key, which already marked it.
  bool element() {
    if (!containers_.empty() && containers_.back().empty) {
      containers_.back().empty = false;
      if (containers_.size() >= 1024) found.too_deep = true;
    }
    return true;
  }
  bool open(bool object) {
    element();
    containers_.push_back(Container{object});
    return true;
  }
  bool close() {
    containers_.pop_back();
    return true;
  }
  std::vector<Container> containers_;
};

}  // namespace

Differences differencesOf(std::string_view line) {
  DifferenceFinder finder;
  finder.found.nul = line.find('\0') != std::string_view::npos;
  const bool valid = json::sax_parse(line.begin(), line.end(), &finder);
  // Past a parse error simdjson rejects the line as nlohmann does; only what
  // nlohmann accepted can be read differently.
  if (!valid)
    finder.found.duplicate_keys = finder.found.big_integer = finder.found.too_deep = false;
  return finder.found;
}

bool decodeLineExpected(std::string_view line, Record* out, std::string* why) {
  return decodeLineDom(line, out, why);
}

}  // namespace sv::report::testing
