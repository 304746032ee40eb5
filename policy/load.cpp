// Policy loading: layers → one Policy, with every diagnostic at once.
//
// Each layer (preset, file, override, env variable) is parsed into a JsonDoc
// and applied directly onto the accumulating Policy: scalars assign, lists
// append (or are cleared first when an `-o key=value` replaces them). Rules
// are resolved to absolute globs as they are read, so each keeps the
// file:line:col it came from. Checks that need the whole policy (profile
// references, duplicate ids, contradictions, rules that can never fire) run
// once at the end, in validate.cpp.
#include "policy/load.h"

#include <algorithm>
#include <set>

#include "policy/env_rules.h"
#include "policy/json_doc.h"
#include "policy/path.h"
#include "policy/presets.h"
#include "policy/validate.h"

namespace sv::policy {
namespace {

using nlohmann::json;

std::string joinKeys(std::initializer_list<std::string_view> keys) {
  std::string out;
  for (auto k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

const char* typeName(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    default: return "a number";
  }
}

const std::set<std::string_view> kKnownCaps = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
    "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
    "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE"};

// Capabilities that let a process step around the supervisor (load code into
// the kernel, trace or impersonate others, bypass file permissions).
const std::set<std::string_view> kDangerousCaps = {
    "CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_BPF",
    "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_SETUID",
    "CAP_SETGID", "CAP_SETPCAP", "CAP_SETFCAP", "CAP_MAC_ADMIN", "CAP_MAC_OVERRIDE",
    "CAP_SYS_BOOT", "CAP_MKNOD", "CAP_FOWNER", "CAP_CHOWN", "CAP_LINUX_IMMUTABLE",
    "CAP_SYS_CHROOT", "CAP_CHECKPOINT_RESTORE"};

bool hasWildcard(std::string_view s) {
  return s.find_first_of("*?[\\") != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool validHostname(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  size_t label = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    char c = h[i];
    if (c == '.') {
      if (label == 0 || h[i - 1] == '-') return false;
      label = 0;
      continue;
    }
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    if (!ok || (label == 0 && c == '-') || ++label > 63) return false;
  }
  return label > 0 && h.back() != '-';
}

bool parsePort(std::string_view s, int* out) {
  if (s.empty() || s.size() > 5) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// "10.0.0.0/8", "192.0.2.1:443", "198.51.100.0/24:8000-8100", "[2001:db8::1]:443",
// "2001:db8::/32", "github.com:22", "localhost". Returns an error message or "".
std::string parseNetSpec(std::string_view spec, NetRule* rule) {
  std::string_view addr = spec, ports;
  bool have_ports = false;
  if (!spec.empty() && spec.front() == '[') {
    size_t close = spec.find(']');
    if (close == std::string_view::npos) return "missing ']' in '" + std::string(spec) + "'";
    addr = spec.substr(1, close - 1);
    std::string_view rest = spec.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return "expected ':port' after ']' in '" + std::string(spec) + "'";
      ports = rest.substr(1);
      have_ports = true;
    }
  } else {
    size_t colons = std::count(spec.begin(), spec.end(), ':');
    if (colons == 1) {
      size_t c = spec.find(':');
      addr = spec.substr(0, c);
      ports = spec.substr(c + 1);
      have_ports = true;
    }
  }
  if (addr.empty()) return "empty address in '" + std::string(spec) + "'";
  if (have_ports) {
    if (ports == "*") {
      rule->port_lo = 0;
      rule->port_hi = 65535;
    } else {
      size_t dash = ports.find('-');
      int lo = 0, hi = 0;
      if (!parsePort(ports.substr(0, dash), &lo) ||
          (dash != std::string_view::npos && !parsePort(ports.substr(dash + 1), &hi))) {
        return "bad port '" + std::string(ports) + "' (expected N, N-M or *)";
      }
      if (dash == std::string_view::npos) hi = lo;
      if (lo < 1 || lo > 65535 || hi < 1 || hi > 65535) {
        return "port out of range 1..65535 in '" + std::string(ports) + "'";
      }
      if (lo > hi) return "port range " + std::string(ports) + " is empty (low > high)";
      rule->port_lo = static_cast<uint16_t>(lo);
      rule->port_hi = static_cast<uint16_t>(hi);
    }
  }
  bool ipish = addr.find(':') != std::string_view::npos ||
               addr.find_first_not_of("0123456789./") == std::string_view::npos;
  if (ipish) {
    std::string err;
    auto cidr = Cidr::parse(addr, &err);
    if (!cidr) return "bad address: " + err;
    rule->cidr = *cidr;
    return "";
  }
  if (!validHostname(addr)) return "'" + std::string(addr) + "' is neither an address nor a host name";
  rule->host = lower(addr);
  return "";
}

// One rule entry as written: a string or {<valueKey>, id, reason, ...}.
struct RawRule {
  std::string value;
  std::string id;
  std::string reason;
  std::string profile;       // exec.switch only
  std::string value_ptr;     // JSON pointer of the value (for positions)
  bool ok = false;
};

class Loader {
 public:
  Loader(const LoadRequest& req, std::vector<Diagnostic>* diags) : req_(req), diags_(diags) {}

  void apply(const JsonDoc& doc, std::set<std::string> replace) {
    doc_ = &doc;
    replace_ = std::move(replace);
    const json& root = doc.root;
    if (!root.is_object()) {
      error("", std::string("a policy must be a JSON object, not ") + typeName(root));
      return;
    }
    checkKeys(root, "", {"version", "mode", "fallback", "filesystem", "exec", "network",
                         "environment", "profiles", "capabilities", "audit"});
    if (auto* v = member(root, "version")) {
      if (!v->is_number_integer() || v->get<long long>() != 1) {
        error("/version", "unsupported version (expected 1)");
      }
    }
    if (auto* v = member(root, "mode")) {
      if (auto s = enumString(*v, "/mode", {"enforce", "audit"})) {
        policy_.mode = *s == "audit" ? Mode::Audit : Mode::Enforce;
      }
    }
    if (auto* v = member(root, "fallback")) {
      if (auto s = enumString(*v, "/fallback", {"fail-closed", "unsafe-host-process"})) {
        policy_.fallback = *s == "fail-closed" ? Fallback::FailClosed : Fallback::UnsafeHostProcess;
      }
    }
    if (auto* v = member(root, "filesystem")) applyFilesystem(*v, "/filesystem", "", policy_.filesystem);
    if (auto* v = member(root, "exec")) applyExec(*v, "/exec", "", policy_.exec);
    if (auto* v = member(root, "network")) applyNetwork(*v, "/network", "", policy_.network);
    if (auto* v = member(root, "environment")) applyEnvironment(*v, "/environment");
    if (auto* v = member(root, "profiles")) applyProfiles(*v, "/profiles");
    if (auto* v = member(root, "capabilities")) applyCapabilities(*v, "/capabilities");
    if (auto* v = member(root, "audit")) applyAudit(*v, "/audit");
    if (!doc.name.starts_with("-o") && !doc.name.starts_with("env:")) policy_.name = doc.name;
  }

  // The layered policy, for validatePolicy() (validate.h).
  Policy take() {
    addHomeRules();
    addEnvSecrets();
    return std::move(policy_);
  }

  void errorAt(const std::string& file, int line, int col, std::string msg, bool warning = false) {
    diags_->push_back({file, line, col, std::move(msg), warning});
  }

 private:
  // filesystem.toolchains / caches / secrets: the rules derived at launch
  // (home_rules.h), after every layer has had its say on the flags.
  void addHomeRules() {
    FilesystemRules& fs = policy_.filesystem;
    const HomeRules& h = req_.home_rules;
    auto add = [](std::vector<PathRule>& dst, const HomeRule& r, std::string_view section) {
      PathRule rule;
      rule.id = r.id;
      rule.reason = r.reason;
      rule.pattern = r.path;
      // No path in the name: the BPF LSM learns only the id and looks the
      // name up by it (self_protect.cpp); the event's path says which.
      rule.name = "filesystem." + std::string(section) + " " + r.id;
      rule.origin = {std::string(kDerivedOrigin), 0, 0};
      rule.absent_at_load = !r.present;
      if (!Glob::compile(escapeGlob(r.path), &rule.glob, nullptr, nullptr, true)) return;
      dst.push_back(std::move(rule));
    };
    if (fs.toolchains) {
      for (const auto& r : h.toolchains) add(fs.readable_roots, r, "toolchains");
      policy_.home_notes = h.notes;
    }
    if (fs.caches)
      for (const auto& r : h.caches) add(fs.writable_roots, r, "caches");
    if (fs.secrets)
      for (const auto& r : h.secrets) {
        add(fs.deny_read, r, "secrets");
        add(fs.deny_write, r, "secrets");
      }
  }

  // environment.secrets: the built-in credential names (env_rules.h), after
  // the user's own deny entries, whatever layer turned the flag on.
  void addEnvSecrets() {
    if (!policy_.environment.secrets) return;
    for (const auto& e : envSecrets()) {
      EnvRule r;
      r.id = std::string(e.id);
      r.reason = std::string(e.reason);
      r.pattern = std::string(e.pattern);
      r.name = "environment.secrets " + r.pattern;
      r.origin = {"builtin", 0, 0};
      policy_.environment.deny.push_back(std::move(r));
    }
  }

  // ---- diagnostics ----
  void report(const std::string& ptr, std::string msg, bool at_key, bool warning) {
    TextPos p = at_key ? doc_->keyPos(ptr) : doc_->valuePos(ptr);
    diags_->push_back({doc_->name, p.line, p.column, std::move(msg), warning});
  }
  void error(const std::string& ptr, std::string msg, bool at_key = false) {
    report(ptr, std::move(msg), at_key, false);
  }
  void errorAtOrigin(const Origin& o, std::string msg, bool warning = false) {
    diags_->push_back({o.file, o.line, o.column, std::move(msg), warning});
  }
  Origin origin(const std::string& ptr) const {
    TextPos p = doc_->valuePos(ptr);
    return {doc_->name, p.line, p.column};
  }

  // ---- typed access ----
  const json* member(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  void checkKeys(const json& obj, const std::string& ptr,
                 std::initializer_list<std::string_view> allowed) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
      std::string where = ptr.empty() ? "the policy" : "\"" + ptr.substr(1) + "\"";
      std::replace(where.begin(), where.end(), '/', '.');
      error(pointerAppend(ptr, it.key()),
            "unknown key \"" + it.key() + "\" in " + where + " (expected one of: " +
                joinKeys(allowed) + ")",
            true);
    }
  }
  bool expectObject(const json& v, const std::string& ptr) {
    if (v.is_object()) return true;
    error(ptr, std::string("expected an object, got ") + typeName(v));
    return false;
  }
  bool expectArray(const json& v, const std::string& ptr) {
    if (v.is_array()) return true;
    error(ptr, std::string("expected an array, got ") + typeName(v));
    return false;
  }
  std::optional<std::string> stringAt(const json& v, const std::string& ptr) {
    if (v.is_string()) return v.get<std::string>();
    error(ptr, std::string("expected a string, got ") + typeName(v));
    return std::nullopt;
  }
  std::optional<std::string> enumString(const json& v, const std::string& ptr,
                                        std::initializer_list<std::string_view> values) {
    auto s = stringAt(v, ptr);
    if (!s) return std::nullopt;
    if (std::find(values.begin(), values.end(), *s) != values.end()) return s;
    error(ptr, "invalid value \"" + *s + "\" (expected one of: " + joinKeys(values) + ")");
    return std::nullopt;
  }
  bool replaces(const std::string& ptr) const { return replace_.count(ptr) > 0; }

  RawRule rawRule(const json& v, const std::string& ptr, const char* value_key, bool need_profile) {
    RawRule r;
    r.value_ptr = ptr;
    if (v.is_string() && !need_profile) {
      r.value = v.get<std::string>();
    } else if (v.is_object()) {
      if (need_profile) {
        checkKeys(v, ptr, {value_key, "profile", "id", "reason"});
      } else {
        checkKeys(v, ptr, {value_key, "id", "reason"});
      }
      const json* val = member(v, value_key);
      if (!val) {
        error(ptr, std::string("missing \"") + value_key + "\"");
        return r;
      }
      r.value_ptr = pointerAppend(ptr, value_key);
      auto s = stringAt(*val, r.value_ptr);
      if (!s) return r;
      r.value = *s;
      if (auto* id = member(v, "id")) {
        std::string p = pointerAppend(ptr, "id");
        auto s2 = stringAt(*id, p);
        if (!s2) return r;
        if (s2->empty()) {
          error(p, "empty id");
          return r;
        }
        r.id = *s2;
      }
      if (auto* reason = member(v, "reason")) {
        auto s3 = stringAt(*reason, pointerAppend(ptr, "reason"));
        if (!s3) return r;
        r.reason = *s3;
      }
      if (need_profile) {
        const json* prof = member(v, "profile");
        if (!prof) {
          error(ptr, "missing \"profile\"");
          return r;
        }
        auto s4 = stringAt(*prof, pointerAppend(ptr, "profile"));
        if (!s4) return r;
        r.profile = *s4;
      }
    } else {
      error(ptr, need_profile
                     ? std::string("expected an object {\"") + value_key + "\", \"profile\"}, got " +
                           typeName(v)
                     : std::string("expected a string or an object with \"") + value_key +
                           "\", got " + typeName(v));
      return r;
    }
    if (r.value.empty()) {
      error(r.value_ptr, "empty pattern");
      return r;
    }
    r.ok = true;
    return r;
  }

  // Resolves a pattern as written to an absolute one. Roots are anchored at the
  // workspace; relative globs without `./` match at any depth below it.
  std::optional<std::string> resolve(const RawRule& r, bool root) {
    const std::string& p = r.value;
    std::string abs;
    if (p.front() == '/') {
      abs = normalizePath("/", p);
    } else if (p == "~" || p.starts_with("~/")) {
      if (req_.home.empty()) {
        // A preset's home entries (git config) just drop out without a home;
        // a user's own `~` rule is an error they can fix.
        if (doc_->name.starts_with("preset:")) return std::nullopt;
        error(r.value_ptr, "\"~\" used but the home directory is unknown");
        return std::nullopt;
      }
      abs = normalizePath(req_.home, p.size() > 2 ? std::string_view(p).substr(2) : "");
    } else if (p.front() == '~') {
      error(r.value_ptr, "\"~user\" is not supported; use \"~/\" or an absolute path");
      return std::nullopt;
    } else {
      std::string anchored = normalizePath(req_.workspace, p);
      if (!isUnder(anchored, req_.workspace)) {
        error(r.value_ptr, "relative path \"" + p + "\" escapes the workspace");
        return std::nullopt;
      }
      bool explicit_anchor = p == "." || p.starts_with("./");
      if (root || explicit_anchor) {
        abs = anchored;
      } else {
        abs = normalizePath(req_.workspace, "**/" + p);
      }
    }
    if (p.size() > 1 && p.back() == '/' && abs != "/") abs += "/";
    return abs;
  }

  // Reports a malformed glob at the offending character.
  bool checkGlobSyntax(const RawRule& r) {
    std::string err;
    int col = 0;
    if (Glob::checkSyntax(r.value, &err, &col)) return true;
    TextPos pos = doc_->valuePos(r.value_ptr);
    if (pos.line) pos.column += 1 + col;  // past the opening quote
    diags_->push_back({doc_->name, pos.line, pos.column, "bad glob \"" + r.value + "\": " + err,
                       false});
    return false;
  }

  std::optional<Glob> compileRule(const RawRule& r, const std::string& abs, bool prefix) {
    if (!checkGlobSyntax(r)) return std::nullopt;
    std::string err;
    int col = 0;
    Glob g;
    if (!Glob::compile(abs, &g, &err, &col, prefix)) {
      error(r.value_ptr, "bad glob \"" + r.value + "\": " + err);
      return std::nullopt;
    }
    return g;
  }

  void applyPathList(const json& v, const std::string& ptr, const std::string& id_prefix,
                     const std::string& section, bool root, std::vector<PathRule>& dst,
                     bool prefix = true) {
    if (!expectArray(v, ptr)) return;
    if (replaces(ptr)) dst.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string ep = pointerAppend(ptr, std::to_string(i));
      RawRule r = rawRule(v[i], ep, "path", false);
      if (!r.ok) continue;
      if (root && hasWildcard(r.value)) {
        error(r.value_ptr, "\"" + r.value + "\": " + section +
                               " entries are plain paths (directories or files), not globs");
        continue;
      }
      auto abs = resolve(r, root);
      if (!abs) continue;
      auto g = compileRule(r, *abs, prefix);
      if (!g) continue;
      PathRule rule;
      rule.id = r.id.empty() ? id_prefix + section + ":" + r.value : r.id;
      rule.reason = r.reason;
      rule.pattern = r.value;
      rule.name = id_prefix + (section.starts_with("exec.") ? "" : "filesystem.") + section + " " +
                  r.value;
      rule.glob = std::move(*g);
      rule.origin = origin(r.value_ptr);
      dst.push_back(std::move(rule));
    }
  }

  void applyFilesystem(const json& v, const std::string& ptr, const std::string& id_prefix,
                       FilesystemRules& fs) {
    if (!expectObject(v, ptr)) return;
    const bool base = id_prefix.empty();
    if (base)
      checkKeys(v, ptr, {"readableRoots", "writableRoots", "denyRead", "denyWrite", "toolchains",
                         "caches", "secrets"});
    else
      checkKeys(v, ptr, {"readableRoots", "writableRoots", "denyRead", "denyWrite"});
    for (auto [key, flag] : {std::pair{"toolchains", &fs.toolchains},
                             {"caches", &fs.caches}, {"secrets", &fs.secrets}}) {
      const json* x = base ? member(v, key) : nullptr;
      if (!x) continue;
      if (x->is_boolean())
        *flag = x->get<bool>();
      else
        error(ptr + "/" + key, std::string("expected true or false, got ") + typeName(*x));
    }
    if (auto* x = member(v, "readableRoots"))
      applyPathList(*x, ptr + "/readableRoots", id_prefix, "readableRoots", true, fs.readable_roots);
    if (auto* x = member(v, "writableRoots"))
      applyPathList(*x, ptr + "/writableRoots", id_prefix, "writableRoots", true, fs.writable_roots);
    if (auto* x = member(v, "denyRead"))
      applyPathList(*x, ptr + "/denyRead", id_prefix, "denyRead", false, fs.deny_read);
    if (auto* x = member(v, "denyWrite"))
      applyPathList(*x, ptr + "/denyWrite", id_prefix, "denyWrite", false, fs.deny_write);
  }

  void applyExec(const json& v, const std::string& ptr, const std::string& id_prefix,
                 ExecRules& ex) {
    if (!expectObject(v, ptr)) return;
    checkKeys(v, ptr, {"allow", "deny", "switch"});
    if (auto* x = member(v, "allow"))
      // exec.allow names binaries: exact globs (write `dir/**` for a tree).
      // Deny rules cover everything below a match, like a gitignore entry.
      applyPathList(*x, ptr + "/allow", id_prefix, "exec.allow", false, ex.allow, false);
    if (auto* x = member(v, "deny"))
      applyPathList(*x, ptr + "/deny", id_prefix, "exec.deny", false, ex.deny);
    if (auto* x = member(v, "switch")) {
      std::string sp = ptr + "/switch";
      if (!expectArray(*x, sp)) return;
      if (replaces(sp)) ex.switches.clear();
      for (size_t i = 0; i < x->size(); ++i) {
        std::string ep = pointerAppend(sp, std::to_string(i));
        RawRule r = rawRule((*x)[i], ep, "match", true);
        if (!r.ok) continue;
        auto abs = resolve(r, false);
        if (!abs) continue;
        auto g = compileRule(r, *abs, /*prefix=*/false);
        if (!g) continue;
        SwitchRule s;
        s.id = r.id.empty() ? id_prefix + "exec.switch:" + r.value : r.id;
        s.reason = r.reason;
        s.pattern = r.value;
        s.name = id_prefix + "exec.switch " + r.value;
        s.glob = std::move(*g);
        s.profile = r.profile;
        s.origin = origin(pointerAppend(ep, "profile"));
        ex.switches.push_back(std::move(s));
      }
    }
  }

  void applyNetwork(const json& v, const std::string& ptr, const std::string& id_prefix,
                    NetworkRules& net) {
    if (!expectObject(v, ptr)) return;
    checkKeys(v, ptr, {"mode", "allow"});
    if (auto* m = member(v, "mode")) {
      if (auto s = enumString(*m, ptr + "/mode", {"none", "localhost", "allowlist", "all"})) {
        net.mode = *s == "none"        ? NetworkMode::None
                   : *s == "localhost" ? NetworkMode::Localhost
                   : *s == "allowlist" ? NetworkMode::Allowlist
                                       : NetworkMode::All;
      }
    }
    if (auto* a = member(v, "allow")) {
      std::string ap = ptr + "/allow";
      if (!expectArray(*a, ap)) return;
      if (replaces(ap)) net.allow.clear();
      for (size_t i = 0; i < a->size(); ++i) {
        std::string ep = pointerAppend(ap, std::to_string(i));
        RawRule r = rawRule((*a)[i], ep, "to", false);
        if (!r.ok) continue;
        NetRule n;
        std::string err = parseNetSpec(r.value, &n);
        if (!err.empty()) {
          error(r.value_ptr, "network.allow: " + err);
          continue;
        }
        n.id = r.id.empty() ? id_prefix + "network.allow:" + r.value : r.id;
        n.reason = r.reason;
        n.spec = r.value;
        n.name = id_prefix + "network.allow " + r.value;
        n.origin = origin(r.value_ptr);
        net.allow.push_back(std::move(n));
      }
    }
  }

  // environment.allow / deny: name globs (model.h EnvRule).
  void applyEnvList(const json& v, const std::string& ptr, const std::string& section,
                    std::vector<EnvRule>& dst) {
    if (!expectArray(v, ptr)) return;
    if (replaces(ptr)) dst.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      RawRule r = rawRule(v[i], pointerAppend(ptr, std::to_string(i)), "name", false);
      if (!r.ok) continue;
      if (r.value.find('=') != std::string::npos) {
        error(r.value_ptr, "\"" + r.value + "\": a variable name cannot contain '='");
        continue;
      }
      if (!checkGlobSyntax(r)) continue;
      EnvRule rule;
      rule.id = r.id.empty() ? "environment." + section + ":" + r.value : r.id;
      rule.reason = r.reason;
      rule.pattern = r.value;
      rule.name = "environment." + section + " " + r.value;
      rule.origin = origin(r.value_ptr);
      dst.push_back(std::move(rule));
    }
  }

  void applyEnvironment(const json& v, const std::string& ptr) {
    if (!expectObject(v, ptr)) return;
    EnvironmentRules& env = policy_.environment;
    checkKeys(v, ptr, {"mode", "secrets", "allow", "deny", "set"});
    if (auto* m = member(v, "mode")) {
      if (auto s = enumString(*m, ptr + "/mode", {"denylist", "allowlist"}))
        env.mode = *s == "allowlist" ? EnvMode::Allowlist : EnvMode::Denylist;
    }
    if (auto* x = member(v, "secrets")) {
      if (x->is_boolean())
        env.secrets = x->get<bool>();
      else
        error(ptr + "/secrets", std::string("expected true or false, got ") + typeName(*x));
    }
    if (auto* x = member(v, "allow")) applyEnvList(*x, ptr + "/allow", "allow", env.allow);
    if (auto* x = member(v, "deny")) applyEnvList(*x, ptr + "/deny", "deny", env.deny);
    auto* set = member(v, "set");
    if (!set || !expectObject(*set, ptr + "/set")) return;
    for (auto it = set->begin(); it != set->end(); ++it) {
      const std::string ep = pointerAppend(ptr + "/set", it.key());
      if (it.key().empty() || it.key().find('=') != std::string::npos) {
        error(ep, "bad variable name \"" + it.key() + "\" (not empty, no '=')", true);
        continue;
      }
      auto value = stringAt(*it, ep);
      if (!value) continue;
      auto same = std::find_if(env.set.begin(), env.set.end(),
                               [&](const EnvSet& s) { return s.name == it.key(); });
      EnvSet& s = same != env.set.end() ? *same : env.set.emplace_back();
      s.id = "environment.set:" + it.key();
      s.name = it.key();
      s.value = *value;
      s.origin = origin(ep);
    }
  }

  void applyProfiles(const json& v, const std::string& ptr) {
    if (!expectObject(v, ptr)) return;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& name = it.key();
      std::string pp = pointerAppend(ptr, name);
      bool good = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
      if (!good) {
        error(pp, "bad profile name \"" + name + "\" (letters, digits, '-', '_', '.')", true);
        continue;
      }
      if (!expectObject(*it, pp)) continue;
      if (it->contains("environment")) {
        error(pp + "/environment",
              "a profile cannot change the environment: it is decided once, when the command "
              "starts, and a process that execs into a profile keeps the environment it has "
              "(the supervisor does not rewrite an exec's envp); put it in the base policy's "
              "\"environment\"",
              true);
      }
      json others = *it;  // positions come from the document, not from this copy
      others.erase("environment");
      checkKeys(others, pp, {"filesystem", "exec", "network"});
      Profile& prof = policy_.profiles[name];
      if (prof.name.empty()) {
        prof.name = name;
        TextPos kp = doc_->keyPos(pp);
        prof.origin = {doc_->name, kp.line, kp.column};
      }
      std::string idp = "profiles." + name + ".";
      if (auto* x = member(*it, "filesystem")) applyFilesystem(*x, pp + "/filesystem", idp, prof.filesystem);
      if (auto* x = member(*it, "exec")) applyExec(*x, pp + "/exec", idp, prof.exec);
      if (auto* x = member(*it, "network")) applyNetwork(*x, pp + "/network", idp, prof.network);
    }
  }

  void applyCapabilities(const json& v, const std::string& ptr) {
    if (!expectObject(v, ptr)) return;
    checkKeys(v, ptr, {"keep"});
    auto* keep = member(v, "keep");
    if (!keep) return;
    std::string kp = ptr + "/keep";
    if (!expectArray(*keep, kp)) return;
    if (replaces(kp)) policy_.keep_capabilities.clear();
    for (size_t i = 0; i < keep->size(); ++i) {
      std::string ep = pointerAppend(kp, std::to_string(i));
      auto s = stringAt((*keep)[i], ep);
      if (!s) continue;
      if (!kKnownCaps.count(*s)) {
        error(ep, "unknown capability \"" + *s + "\" (write it like CAP_NET_BIND_SERVICE)");
        continue;
      }
      if (kDangerousCaps.count(*s)) {
        report(ep, "keeping " + *s + " lets the tree step around the supervisor", false, true);
      }
      if (std::find(policy_.keep_capabilities.begin(), policy_.keep_capabilities.end(), *s) ==
          policy_.keep_capabilities.end()) {
        policy_.keep_capabilities.push_back(*s);
      }
    }
  }

  // audit.redact (model.h RedactPattern). A relative path glob matches at any
  // depth anywhere, not only in the workspace: the log records paths outside
  // it too, and a redaction that misses is the costly mistake.
  void applyRedact(const json& v, const std::string& ptr) {
    if (!expectArray(v, ptr)) return;
    std::vector<RedactPattern>& list = policy_.audit.redact;
    if (replaces(ptr)) list.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      RawRule raw;
      raw.value_ptr = pointerAppend(ptr, std::to_string(i));
      auto s = stringAt(v[i], raw.value_ptr);
      if (!s) continue;
      raw.value = *s;
      if (raw.value.empty()) {
        error(raw.value_ptr, "empty pattern");
        continue;
      }
      RedactPattern r;
      r.pattern = raw.value;
      r.is_path = raw.value.find('/') != std::string::npos;
      r.origin = origin(raw.value_ptr);
      if (!r.is_path) {
        if (!checkGlobSyntax(raw)) continue;
      } else {
        const std::string& p = raw.value;
        std::optional<std::string> abs;
        if (p.front() == '/' || p.front() == '~' || p.starts_with("./")) {
          abs = resolve(raw, /*root=*/false);
        } else {
          abs = normalizePath("/", p.starts_with("**/") ? p : "**/" + p);
          if (!abs->starts_with("/**")) {
            error(raw.value_ptr, "\"" + p + "\": \"..\" in a pattern that matches at any depth");
            continue;
          }
        }
        if (!abs) continue;
        auto g = compileRule(raw, *abs, /*prefix=*/true);
        if (!g) continue;
        r.glob = std::move(*g);
      }
      const bool seen = std::any_of(list.begin(), list.end(), [&](const RedactPattern& o) {
        return o.pattern == r.pattern;
      });
      if (!seen) list.push_back(std::move(r));
    }
  }

  // The size and count keys of a file or syslog sink (docs/policy.md, audit).
  bool auditSinkNumbers(const json& s, const std::string& ep, AuditSink& sink) {
    auto number = [&](const char* key, double lo, double hi, double& out) {
      const json* x = member(s, key);
      if (!x) return true;
      if (!x->is_number() || x->get<double>() < lo || x->get<double>() > hi) {
        error(ep + "/" + key, "expected a number from " + std::to_string(int64_t(lo)) + " to " +
                                  std::to_string(int64_t(hi)));
        return false;
      }
      out = x->get<double>();
      return true;
    };
    double files = sink.max_files;
    bool ok = number("maxSizeMb", 0, 1 << 20, sink.max_size_mb) &&
              number("maxFiles", 1, 1000, files) &&
              number("spoolMaxMb", 0, 1 << 20, sink.spool_max_mb);
    sink.max_files = int(files);
    for (auto [key, out] : {std::pair{"caFile", &sink.ca_file}, {"spoolDir", &sink.spool_dir}}) {
      if (auto* x = member(s, key)) {
        auto str = stringAt(*x, ep + "/" + key);
        if (!str) return false;
        *out = normalizePath(req_.workspace, *str);
      }
    }
    return ok;
  }

  // The kafka and otlp keys: plain strings, and string-to-string maps that go
  // to librdkafka or into the HTTP request as they are.
  bool auditSinkStrings(const json& s, const std::string& ep, AuditSink& sink) {
    for (auto [key, out] : {std::pair{"brokers", &sink.brokers}, {"topic", &sink.topic},
                            {"url", &sink.url}}) {
      if (auto* x = member(s, key)) {
        auto str = stringAt(*x, ep + "/" + key);
        if (!str) return false;
        *out = *str;
      }
    }
    for (auto [key, out] : {std::pair{"options", &sink.options}, {"headers", &sink.headers}}) {
      const json* x = member(s, key);
      if (!x) continue;
      if (!expectObject(*x, ep + "/" + key)) return false;
      for (const auto& [name, value] : x->items()) {
        auto str = stringAt(value, pointerAppend(ep + "/" + key, name));
        if (!str) return false;
        (*out)[name] = *str;
      }
    }
    return true;
  }

  void applyAudit(const json& v, const std::string& ptr) {
    if (!expectObject(v, ptr)) return;
    checkKeys(v, ptr, {"level", "format", "sinks", "redact", "chain"});
    if (auto* x = member(v, "redact")) applyRedact(*x, ptr + "/redact");
    if (auto* x = member(v, "chain")) {
      if (x->is_boolean())
        policy_.audit.chain = x->get<bool>();
      else
        error(ptr + "/chain", std::string("expected true or false, got ") + typeName(*x));
    }
    if (auto* x = member(v, "level")) {
      if (auto s = enumString(*x, ptr + "/level", {"deny", "decisions", "all"})) {
        policy_.audit.level = *s == "deny" ? AuditLevel::Deny
                              : *s == "all" ? AuditLevel::All
                                            : AuditLevel::Decisions;
      }
    }
    if (auto* x = member(v, "format")) {
      if (auto s = enumString(*x, ptr + "/format", {"native", "ocsf", "ecs"})) {
        policy_.audit.format = *s == "ocsf" ? AuditFormat::Ocsf
                               : *s == "ecs" ? AuditFormat::Ecs
                                             : AuditFormat::Native;
      }
    }
    if (auto* x = member(v, "sinks")) {
      std::string sp = ptr + "/sinks";
      if (!expectArray(*x, sp)) return;
      if (replaces(sp)) policy_.audit.sinks.clear();
      for (size_t i = 0; i < x->size(); ++i) {
        std::string ep = pointerAppend(sp, std::to_string(i));
        const json& s = (*x)[i];
        if (!expectObject(s, ep)) continue;
        checkKeys(s, ep,
                  {"type", "path", "fd", "maxSizeMb", "maxFiles", "caFile", "spoolDir", "spoolMaxMb",
                   "brokers", "topic", "options", "url", "headers"});
        AuditSink sink;
        const json* type = member(s, "type");
        if (!type) {
          error(ep, "missing \"type\"");
          continue;
        }
        auto t = enumString(*type, ep + "/type", {"file", "stdout", "fd", "syslog", "kafka", "otlp"});
        if (!t) continue;
        sink.type = *t;
        if (auto* p = member(s, "path")) {
          auto ps = stringAt(*p, ep + "/path");
          if (!ps) continue;
          sink.path = sink.type == "file" ? normalizePath(req_.workspace, *ps) : *ps;
        }
        if (auto* f = member(s, "fd")) {
          if (!f->is_number_integer() || f->get<long long>() < 0 || f->get<long long>() > 65535) {
            error(ep + "/fd", "expected a file descriptor number");
            continue;
          }
          sink.fd = static_cast<int>(f->get<long long>());
        }
        if (!auditSinkNumbers(s, ep, sink) || !auditSinkStrings(s, ep, sink)) continue;
        if ((sink.type == "file" || sink.type == "syslog") && sink.path.empty()) {
          error(ep, "a " + sink.type + " sink needs \"path\"");
          continue;
        }
        if (sink.type == "fd" && sink.fd < 0) {
          error(ep, "an fd sink needs \"fd\"");
          continue;
        }
        if (sink.type == "kafka" && (sink.brokers.empty() || sink.topic.empty())) {
          error(ep, "a kafka sink needs \"brokers\" and \"topic\"");
          continue;
        }
        if (sink.type == "otlp" && sink.url.rfind("http://", 0) != 0 &&
            sink.url.rfind("https://", 0) != 0) {
          error(ep + "/url", "an otlp sink needs \"url\": http(s)://HOST:PORT/v1/logs");
          continue;
        }
        policy_.audit.sinks.push_back(std::move(sink));
      }
    }
  }

  const LoadRequest& req_;
  std::vector<Diagnostic>* diags_;
  const JsonDoc* doc_ = nullptr;
  std::set<std::string> replace_;
  Policy policy_;
};

// Known list-valued keys (for `-o key=value` on a list).
bool isListKey(std::string_view last) {
  static const std::set<std::string_view> kLists = {"readableRoots", "writableRoots", "denyRead",
                                                    "denyWrite",     "allow",         "deny",
                                                    "switch",        "keep",          "sinks",
                                                    "redact"};
  return kLists.count(last) > 0;
}

}  // namespace

std::string Diagnostic::format() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += warning ? ": warning: " : ": error: ";
  out += message;
  return out;
}

bool LoadResult::ok() const { return policy != nullptr && errorCount() == 0; }

size_t LoadResult::errorCount() const {
  return std::count_if(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic& d) { return !d.warning; });
}

LoadResult load(const LoadRequest& request) {
  LoadResult result;
  std::vector<Diagnostic>& diags = result.diagnostics;
  try {
    LoadRequest req = request;
    if (auto it = req.env.find("SUPERVISE_PRESET"); it != req.env.end() && !it->second.empty()) {
      req.preset = it->second;
    }
    if (req.workspace.empty() || req.workspace.front() != '/') {
      diags.push_back({"workspace", 0, 0, "workspace must be an absolute path, got \"" +
                                              req.workspace + "\"", false});
      return result;
    }
    req.workspace = normalizePath("/", req.workspace);
    if (!req.home.empty()) req.home = normalizePath("/", req.home);

    Loader loader(req, &diags);
    auto applyText = [&](const std::string& name, std::string_view text,
                         std::set<std::string> replace = {}) {
      JsonDoc doc;
      doc.name = name;
      JsonParseError err;
      if (!parseJsonDoc(text, &doc, &err)) {
        diags.push_back({name, err.pos.line, err.pos.column, err.message, false});
        return;
      }
      loader.apply(doc, std::move(replace));
    };

    if (req.preset != "none") {
      auto text = presetText(req.preset);
      if (!text) {
        std::string known;
        for (const auto& n : presetNames()) known += (known.empty() ? "" : ", ") + n;
        diags.push_back({"preset", 0, 0,
                         "unknown preset \"" + req.preset + "\" (known: " + known + ", none)",
                         false});
      } else {
        applyText("preset:" + req.preset, *text);
      }
    }
    for (const auto& f : req.files) applyText(f.name, f.text);

    auto applyOverride = [&](const std::string& name, const std::string& key,
                             const std::string& value, bool append) {
      std::vector<std::string> parts;
      size_t start = 0;
      while (true) {
        size_t dot = key.find('.', start);
        parts.push_back(key.substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      if (std::any_of(parts.begin(), parts.end(), [](const std::string& s) { return s.empty(); })) {
        diags.push_back({name, 0, 0, "bad key \"" + key + "\"", false});
        return;
      }
      json v = json::parse(value, nullptr, /*allow_exceptions=*/false);
      if (v.is_discarded()) v = value;
      bool list = isListKey(parts.back());
      if (append && !list) {
        diags.push_back({name, 0, 0, "\"+=\" only appends to lists; \"" + key + "\" is not one",
                         false});
        return;
      }
      if (list && !v.is_array()) v = json::array({v});
      JsonDoc doc;
      doc.name = name;
      std::string ptr;
      for (const auto& p : parts) ptr = pointerAppend(ptr, p);
      doc.root = json::object();
      json* cur = &doc.root;
      for (size_t i = 0; i + 1 < parts.size(); ++i) cur = &(*cur)[parts[i]];
      (*cur)[parts.back()] = std::move(v);
      std::set<std::string> replace;
      if (list && !append) replace.insert(ptr);
      loader.apply(doc, std::move(replace));
    };
    for (const auto& o : req.overrides) {
      std::string name = "-o " + o;
      size_t eq = o.find('=');
      if (eq == std::string::npos || eq == 0) {
        diags.push_back({name, 0, 0, "expected key=value or key+=value", false});
        continue;
      }
      bool append = o[eq - 1] == '+';
      applyOverride(name, o.substr(0, append ? eq - 1 : eq), o.substr(eq + 1), append);
    }
    if (auto it = req.env.find("SUPERVISE_MODE"); it != req.env.end() && !it->second.empty()) {
      applyOverride("env:SUPERVISE_MODE", "mode", json(it->second).dump(), false);
    }
    if (auto it = req.env.find("SUPERVISE_NETWORK"); it != req.env.end() && !it->second.empty()) {
      applyOverride("env:SUPERVISE_NETWORK", "network.mode", json(it->second).dump(), false);
    }
    auto policy = validatePolicy(loader.take(), request, &result.diagnostics);
    // Last, after every layer: nothing a file, an override or the environment
    // says can remove or narrow it.
    policy->self_protect = selfProtection(*policy, request.self_protect);
    if (result.errorCount() == 0) result.policy = std::move(policy);
  } catch (const std::exception& e) {
    // Nothing above should throw on bad input; if it does, it is still a
    // diagnostic, never an exception leaving the library.
    diags.push_back({"internal", 0, 0, std::string("policy loader failed: ") + e.what(), false});
    result.policy.reset();
  }
  return result;
}

}  // namespace sv::policy
