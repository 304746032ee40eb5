// load(): presets, layering, overrides, env, resolution and every validation
// error with its file:line:col.
#include <gtest/gtest.h>

#include "policy/load.h"
#include "policy/presets.h"
#include "tests/unit/load_request.h"

namespace sv::policy {
namespace {

using test_util::all;
using test_util::request;

std::vector<std::string> errors(const LoadResult& res) {
  std::vector<std::string> out;
  for (const auto& d : res.diagnostics)
    if (!d.warning) out.push_back(d.format());
  return out;
}
std::vector<std::string> warnings(const LoadResult& res) {
  std::vector<std::string> out;
  for (const auto& d : res.diagnostics)
    if (d.warning) out.push_back(d.format());
  return out;
}

TEST(Load, PresetsAreValidAndWarningFree) {
  for (const auto& name : presetNames()) {
    LoadRequest r = request("", name);
    LoadResult res = load(r);
    EXPECT_TRUE(res.ok()) << name << "\n" << all(res);
    EXPECT_TRUE(res.diagnostics.empty()) << name << "\n" << all(res);
    ASSERT_TRUE(res.policy);
    EXPECT_EQ(res.policy->name, "preset:" + name);
  }
}

TEST(Load, CodeSandboxContents) {
  LoadResult res = load(request("", "code-sandbox"));
  ASSERT_TRUE(res.ok()) << all(res);
  const Policy& p = *res.policy;
  EXPECT_EQ(p.mode, Mode::Enforce);
  EXPECT_EQ(p.fallback, Fallback::FailClosed);
  EXPECT_EQ(p.network.mode, NetworkMode::Localhost);
  ASSERT_EQ(p.filesystem.deny_write.size(), 5u);
  EXPECT_EQ(p.filesystem.deny_write[4].id, "deny-write-supervise-policy");
  EXPECT_EQ(p.filesystem.deny_write[0].id, "deny-write-env");
  EXPECT_EQ(p.filesystem.deny_write[0].reason, "secrets stay out of the agent's reach");
  EXPECT_EQ(p.filesystem.deny_write[0].glob.pattern(), "/ws/**/.env");
  EXPECT_EQ(p.filesystem.deny_write[1].id, "deny-write-env-variants");
  EXPECT_EQ(p.filesystem.deny_write[2].id, "deny-write-git-config");
  EXPECT_EQ(p.filesystem.deny_write[3].id, "deny-write-git-hooks");
  EXPECT_EQ(p.filesystem.deny_write[3].glob.pattern(), "/ws/**/.git/hooks/**");
  ASSERT_EQ(p.filesystem.writable_roots.size(), 3u);
  EXPECT_EQ(p.filesystem.writable_roots[0].glob.pattern(), "/ws");
  EXPECT_EQ(p.filesystem.writable_roots[1].glob.pattern(), "/tmp");
  EXPECT_EQ(p.filesystem.writable_roots[2].glob.pattern(), "/var/tmp");
  EXPECT_EQ(p.system_read.size(), systemReadPaths().size());
  EXPECT_EQ(p.system_write.size(), systemWritePaths().size());
}

TEST(Load, AuditOnlyAndStrict) {
  LoadResult a = load(request("", "audit-only"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.policy->mode, Mode::Audit);
  EXPECT_EQ(a.policy->network.mode, NetworkMode::All);
  EXPECT_EQ(a.policy->filesystem.writable_roots.at(0).glob.pattern(), "/");
  LoadResult s = load(request("", "strict"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.policy->network.mode, NetworkMode::None);
  EXPECT_TRUE(s.policy->filesystem.writable_roots.empty());
  EXPECT_EQ(s.policy->filesystem.readable_roots.at(0).glob.pattern(), "/ws");
  EXPECT_EQ(s.policy->filesystem.deny_write.size(), 5u);
}

TEST(Load, SystemPathList) {
  const std::vector<std::string_view> expected_read = {
      "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt",
      "/var/lib", "/run", "/tmp", "/var/tmp", "/dev/null", "/dev/zero", "/dev/full",
      "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm", "/proc",
      "/sys/devices/system/cpu", "/sys/fs/cgroup"};
  EXPECT_EQ(systemReadPaths(), expected_read);
  const std::vector<std::string_view> expected_write = {
      "/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm"};
  EXPECT_EQ(systemWritePaths(), expected_write);
}

TEST(Load, PathResolution) {
  LoadResult res = load(request(R"({
    "filesystem": {
      "readableRoots": ["/opt/data/", "~/.cache", "~", "sub/dir", "./x/../y"],
      "writableRoots": ["."],
      "denyRead": [".ssh/**", "./top", "/abs/*.key", "~/.aws"],
      "denyWrite": [".env", ".git/hooks/**"]
    },
    "exec": {"allow": ["/usr/bin/**", "bin/*"]}
  })"));
  ASSERT_TRUE(res.ok()) << all(res);
  const auto& fs = res.policy->filesystem;
  std::vector<std::string> got;
  for (const auto& r : fs.readable_roots) got.push_back(r.glob.pattern());
  EXPECT_EQ(got, (std::vector<std::string>{"/opt/data/", "/home/u/.cache", "/home/u", "/ws/sub/dir",
                                            "/ws/y"}));
  got.clear();
  for (const auto& r : fs.deny_read) got.push_back(r.glob.pattern());
  EXPECT_EQ(got, (std::vector<std::string>{"/ws/**/.ssh/**", "/ws/top", "/abs/*.key",
                                            "/home/u/.aws"}));
  EXPECT_EQ(fs.deny_write[0].glob.pattern(), "/ws/**/.env");
  EXPECT_EQ(res.policy->exec.allow[1].glob.pattern(), "/ws/**/bin/*");
  // Generated ids: section + pattern as written, stable across runs.
  EXPECT_EQ(fs.deny_write[0].id, "denyWrite:.env");
  EXPECT_EQ(fs.readable_roots[1].id, "readableRoots:~/.cache");
  EXPECT_EQ(res.policy->exec.allow[0].id, "exec.allow:/usr/bin/**");
}

TEST(Load, GeneratedIdsIndependentOfOrder) {
  LoadResult a = load(request(R"({"filesystem": {"denyWrite": [".env", "x"]}})", "code-sandbox"));
  LoadResult b = load(request(R"({"filesystem": {"denyWrite": ["x", ".env"]}})", "code-sandbox"));
  ASSERT_TRUE(a.ok() && b.ok());
  // The preset's 5 rules come first.
  EXPECT_EQ(a.policy->filesystem.deny_write[5].id, b.policy->filesystem.deny_write[6].id);
  EXPECT_EQ(a.policy->filesystem.deny_write[5].id, "denyWrite:.env");
}

TEST(Load, NetworkEntries) {
  LoadResult res = load(request(R"({"network": {"mode": "allowlist", "allow": [
      "10.0.0.0/8", "192.0.2.1:443", "198.51.100.0/24:8000-8100", "[2001:db8::1]:443",
      "2001:db8::/32", {"to": "GitHub.com:22", "id": "gh", "reason": "git remote"}, "localhost"]}})"));
  ASSERT_TRUE(res.ok()) << all(res);
  const auto& a = res.policy->network.allow;
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[0].cidr->toString(), "10.0.0.0/8");
  EXPECT_EQ(a[0].port_lo, 0);
  EXPECT_EQ(a[0].port_hi, 65535);
  EXPECT_EQ(a[1].port_lo, 443);
  EXPECT_EQ(a[1].port_hi, 443);
  EXPECT_EQ(a[2].port_lo, 8000);
  EXPECT_EQ(a[2].port_hi, 8100);
  EXPECT_EQ(a[3].cidr->toString(), "2001:db8::1/128");
  EXPECT_EQ(a[4].cidr->toString(), "2001:db8::/32");
  EXPECT_FALSE(a[5].cidr);
  EXPECT_EQ(a[5].host, "github.com");
  EXPECT_EQ(a[5].id, "gh");
  EXPECT_EQ(a[5].reason, "git remote");
  EXPECT_EQ(a[6].host, "localhost");
  EXPECT_EQ(a[0].id, "network.allow:10.0.0.0/8");
}

struct ErrorCase {
  const char* name;
  const char* text;
  const char* expected;  // one exact formatted error
};

TEST(Load, EachValidationErrorWithPosition) {
  const ErrorCase cases[] = {
      {"unknown top key", "{\n  \"modes\": \"audit\"\n}",
       "p.json:2:3: error: unknown key \"modes\" in the policy (expected one of: version, mode, "
       "fallback, filesystem, exec, network, environment, profiles, capabilities, audit)"},
      {"unknown nested key", "{\"filesystem\": {\"readRoots\": []}}",
       "p.json:1:17: error: unknown key \"readRoots\" in \"filesystem\" (expected one of: "
       "readableRoots, writableRoots, denyRead, denyWrite, toolchains, caches, secrets)"},
      {"unknown rule key", "{\"filesystem\": {\"denyWrite\": [{\"path\": \"x\", \"why\": \"y\"}]}}",
       "p.json:1:45: error: unknown key \"why\" in \"filesystem.denyWrite.0\" (expected one of: "
       "path, id, reason)"},
      {"wrong type", "{\"filesystem\": {\"denyWrite\": \".env\"}}",
       "p.json:1:30: error: expected an array, got a string"},
      {"wrong rule type", "{\"filesystem\": {\"denyWrite\": [42]}}",
       "p.json:1:31: error: expected a string or an object with \"path\", got a number"},
      {"bad enum", "{\"mode\": \"permissive\"}",
       "p.json:1:10: error: invalid value \"permissive\" (expected one of: enforce, audit)"},
      {"bad fallback", "{\"fallback\": \"open\"}",
       "p.json:1:14: error: invalid value \"open\" (expected one of: fail-closed, "
       "unsafe-host-process)"},
      {"bad network mode", "{\"network\": {\"mode\": \"some\"}}",
       "p.json:1:22: error: invalid value \"some\" (expected one of: none, localhost, allowlist, "
       "all)"},
      {"bad version", "{\"version\": 2}", "p.json:1:13: error: unsupported version (expected 1)"},
      {"bad glob", "{\"filesystem\": {\"denyRead\": [\"a/[bc\"]}}",
       "p.json:1:33: error: bad glob \"a/[bc\": unterminated or empty character class"},
      {"bad double star", "{\"exec\": {\"deny\": [\"/usr/**bin\"]}}",
       "p.json:1:26: error: bad glob \"/usr/**bin\": `**` must be a whole path component (use `*` "
       "inside a name)"},
      {"glob in root", "{\"filesystem\": {\"readableRoots\": [\"/opt/*\"]}}",
       "p.json:1:35: error: \"/opt/*\": readableRoots entries are plain paths (directories or "
       "files), not globs"},
      {"escaping path", "{\"filesystem\": {\"writableRoots\": [\"../other\"]}}",
       "p.json:1:35: error: relative path \"../other\" escapes the workspace"},
      {"escaping glob", "{\"filesystem\": {\"denyWrite\": [{\"path\": \"a/../../x\"}]}}",
       "p.json:1:40: error: relative path \"a/../../x\" escapes the workspace"},
      {"bad cidr", "{\"network\": {\"mode\": \"allowlist\", \"allow\": [\"10.0.0.1/8\"]}}",
       "p.json:1:45: error: network.allow: bad address: host bits set in '10.0.0.1/8' (did you "
       "mean 10.0.0.0/8?)"},
      {"port range", "{\"network\": {\"allow\": [\"10.0.0.0/8:70000\"]}}",
       "p.json:1:24: error: network.allow: port out of range 1..65535 in '70000'"},
      {"port lo>hi", "{\"network\": {\"allow\": [\"10.0.0.0/8:90-80\"]}}",
       "p.json:1:24: error: network.allow: port range 90-80 is empty (low > high)"},
      {"port zero", "{\"network\": {\"allow\": [\"[::1]:0\"]}}",
       "p.json:1:24: error: network.allow: port out of range 1..65535 in '0'"},
      {"bad host", "{\"network\": {\"allow\": [\"bad_host!:22\"]}}",
       "p.json:1:24: error: network.allow: 'bad_host!' is neither an address nor a host name"},
      {"unknown profile",
       "{\"exec\": {\"switch\": [{\"match\": \"/usr/bin/git\", \"profile\": \"gti\"}]},\n"
       " \"profiles\": {\"git\": {}}}",
       "p.json:1:59: error: exec.switch refers to unknown profile \"gti\" (known: git)"},
      {"switch without profile", "{\"exec\": {\"switch\": [{\"match\": \"/usr/bin/git\"}]}}",
       "p.json:1:22: error: missing \"profile\""},
      {"duplicate id",
       "{\"filesystem\": {\"denyWrite\": [{\"path\": \"a\", \"id\": \"x\"},\n"
       "  {\"path\": \"b\", \"id\": \"x\"}]}}",
       "p.json:2:12: error: duplicate rule id \"x\" (first used at p.json:1:40)"},
      {"duplicate id vs preset id", "{\"filesystem\": {\"denyWrite\": [{\"path\": \"a\", \"id\": \"workspace\"}]}}",
       "p.json:1:40: error: duplicate rule id \"workspace\" (first used at "
       "preset:code-sandbox:14:16)"},
      {"contradiction in one file",
       "{\"filesystem\": {\"writableRoots\": [\"/data\"], \"denyWrite\": [\"/data\"]}}",
       "p.json:1:59: error: denyWrite \"/data\" denies exactly what \"/data\" (p.json:1:35) allows; "
       "the deny wins"},
      {"unknown capability", "{\"capabilities\": {\"keep\": [\"NET_BIND\"]}}",
       "p.json:1:28: error: unknown capability \"NET_BIND\" (write it like CAP_NET_BIND_SERVICE)"},
      {"json syntax", "{\n  \"mode\": \"audit\",\n  \"network\": {\"mode\": none}\n}",
       "p.json:3:23: error: syntax error while parsing value - invalid literal; last read: "
       "'\"mode\": no'"},
      {"duplicate json key", "{\"mode\": \"audit\",\n\"mode\": \"enforce\"}",
       "p.json:2:1: error: duplicate key \"mode\""},
      {"not an object", "[1]", "p.json:1:1: error: a policy must be a JSON object, not an array"},
      {"tilde user", "{\"filesystem\": {\"readableRoots\": [\"~bob/x\"]}}",
       "p.json:1:35: error: \"~user\" is not supported; use \"~/\" or an absolute path"},
      {"empty id", "{\"filesystem\": {\"denyWrite\": [{\"path\": \"a\", \"id\": \"\"}]}}",
       "p.json:1:51: error: empty id"},
      {"bad sink", "{\"audit\": {\"sinks\": [{\"type\": \"file\"}]}}",
       "p.json:1:22: error: a file sink needs \"path\""},
      {"kafka without topic", "{\"audit\": {\"sinks\": [{\"type\": \"kafka\", \"brokers\": \"k:9092\"}]}}",
       "p.json:1:22: error: a kafka sink needs \"brokers\" and \"topic\""},
      {"kafka option not a string",
       "{\"audit\": {\"sinks\": [{\"type\": \"kafka\", \"options\": {\"linger.ms\": 5}}]}}",
       "p.json:1:65: error: expected a string, got a number"},
      {"otlp url", "{\"audit\": {\"sinks\": [{\"type\": \"otlp\", \"url\": \"collector:4318\"}]}}",
       "p.json:1:46: error: an otlp sink needs \"url\": http(s)://HOST:PORT/v1/logs"},
      {"bad profile name", "{\"profiles\": {\"a b\": {}}}",
       "p.json:1:15: error: bad profile name \"a b\" (letters, digits, '-', '_', '.')"},
      {"redact not a list", "{\"audit\": {\"redact\": \"--token=*\"}}",
       "p.json:1:22: error: expected an array, got a string"},
      {"redact not a string", "{\"audit\": {\"redact\": [{\"path\": \"x\"}]}}",
       "p.json:1:23: error: expected a string, got an object"},
      {"redact empty", "{\"audit\": {\"redact\": [\"\"]}}",
       "p.json:1:23: error: empty pattern"},
      {"redact bad string glob", "{\"audit\": {\"redact\": [\"--key=[\"]}}",
       "p.json:1:30: error: bad glob \"--key=[\": unterminated or empty character class"},
      {"redact bad path glob", "{\"audit\": {\"redact\": [\"/a/b**\"]}}",
       "p.json:1:28: error: bad glob \"/a/b**\": `**` must be a whole path component (use `*` "
       "inside a name)"},
      {"redact dotdot anywhere", "{\"audit\": {\"redact\": [\"../x/*\"]}}",
       "p.json:1:23: error: \"../x/*\": \"..\" in a pattern that matches at any depth"},
      {"redact tilde user", "{\"audit\": {\"redact\": [\"~bob/.ssh/**\"]}}",
       "p.json:1:23: error: \"~user\" is not supported; use \"~/\" or an absolute path"},
  };
  for (const auto& c : cases) {
    std::string preset = std::string(c.name).find("preset") != std::string::npos ? "code-sandbox"
                                                                                  : "none";
    LoadResult res = load(request(c.text, preset));
    EXPECT_FALSE(res.ok()) << c.name;
    EXPECT_FALSE(res.policy) << c.name;
    auto errs = errors(res);
    ASSERT_EQ(errs.size(), 1u) << c.name << "\n" << all(res);
    EXPECT_EQ(errs[0], c.expected) << c.name;
  }
}

TEST(Load, ThreeMistakesThreeErrors) {
  const char* text =
      "{\n"
      "  \"version\": 1,\n"
      "  \"mode\": \"enforcing\",\n"
      "  \"filesystem\": {\n"
      "    \"writableRoots\": [\".\"],\n"
      "    \"denyWirte\": [\".env\"]\n"
      "  },\n"
      "  \"network\": {\"mode\": \"allowlist\", \"allow\": [\"10.0.0.0/8:0-80\"]}\n"
      "}\n";
  LoadResult res = load(request(text, "code-sandbox"));
  EXPECT_FALSE(res.ok());
  EXPECT_EQ(errors(res),
            (std::vector<std::string>{
                "p.json:3:11: error: invalid value \"enforcing\" (expected one of: enforce, audit)",
                "p.json:6:5: error: unknown key \"denyWirte\" in \"filesystem\" (expected one of: "
                "readableRoots, writableRoots, denyRead, denyWrite, toolchains, caches, secrets)",
                "p.json:8:46: error: network.allow: port out of range 1..65535 in '0-80'"}))
      << all(res);
}

TEST(Load, Warnings) {
  LoadResult res = load(request(R"({
  "network": {"mode": "none", "allow": ["10.0.0.0/8"]},
  "filesystem": {"denyWrite": ["/srv/x"], "denyRead": ["/nowhere/y"]},
  "capabilities": {"keep": ["CAP_SYS_ADMIN", "CAP_NET_BIND_SERVICE"]}
})", "code-sandbox"));
  EXPECT_TRUE(res.ok()) << all(res);
  EXPECT_EQ(warnings(res),
            (std::vector<std::string>{
                "p.json:4:29: warning: keeping CAP_SYS_ADMIN lets the tree step around the "
                "supervisor",
                "p.json:2:41: warning: network.allow entry never fires: network.mode is \"none\"",
                "p.json:3:32: warning: denyWrite \"/srv/x\" never fires: it is outside every "
                "writable root",
                "p.json:3:56: warning: denyRead \"/nowhere/y\" never fires: it is outside every "
                "readable root"}))
      << all(res);
}

TEST(Load, RepeatingAPresetRuleIsFine) {
  // A file that copies the preset's rules (ids included) layers cleanly.
  LoadRequest r = request(R"({"filesystem": {"denyWrite": [
      {"path": ".env", "id": "deny-write-env", "reason": "secrets stay out of the agent's reach"},
      ".env", ".env"]}})", "code-sandbox");
  LoadResult res = load(r);
  EXPECT_TRUE(res.ok()) << all(res);
  EXPECT_EQ(warnings(res), (std::vector<std::string>{
                               "p.json:3:15: warning: duplicate entry (same as p.json:3:7)"}));
}

TEST(Load, ContradictionAcrossLayersIsAWarning) {
  LoadResult res = load(request(R"({"filesystem": {"denyWrite": ["."]}})", "code-sandbox"));
  EXPECT_TRUE(res.ok()) << all(res);
  ASSERT_EQ(warnings(res).size(), 1u) << all(res);
  EXPECT_NE(warnings(res)[0].find("denies exactly what"), std::string::npos);
}

TEST(Load, LayeringScalarsReplaceListsConcatenate) {
  LoadRequest r = request(R"({"mode": "audit", "filesystem": {"denyWrite": ["secrets/**"]},
                             "network": {"allow": ["10.0.0.0/8"]}})",
                          "code-sandbox");
  r.files.push_back({"q.json", R"({"mode": "enforce", "network": {"allow": ["192.0.2.0/24"]}})"});
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok()) << all(res);
  EXPECT_EQ(res.policy->mode, Mode::Enforce);
  EXPECT_EQ(res.policy->filesystem.deny_write.size(), 6u);
  EXPECT_EQ(res.policy->filesystem.deny_write[5].origin.file, "p.json");
  EXPECT_EQ(res.policy->network.allow.size(), 2u);
  EXPECT_EQ(res.policy->network.mode, NetworkMode::Localhost);  // from the preset
  EXPECT_EQ(res.policy->name, "q.json");
}

TEST(Load, Overrides) {
  LoadRequest r = request("", "code-sandbox");
  r.overrides = {"network.mode=none", "mode=audit", "filesystem.writableRoots+=/data",
                 "filesystem.denyWrite=[\"x\", {\"path\": \"y\", \"id\": \"why\"}]",
                 "profiles.git.network.mode=all"};
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok()) << all(res);
  const Policy& p = *res.policy;
  EXPECT_EQ(p.network.mode, NetworkMode::None);
  EXPECT_EQ(p.mode, Mode::Audit);
  ASSERT_EQ(p.filesystem.writable_roots.size(), 4u);
  EXPECT_EQ(p.filesystem.writable_roots[3].glob.pattern(), "/data");
  ASSERT_EQ(p.filesystem.deny_write.size(), 2u);  // `=` replaced the preset's list
  EXPECT_EQ(p.filesystem.deny_write[1].id, "why");
  EXPECT_EQ(p.profiles.at("git").network.mode, NetworkMode::All);
}

// audit.redact: a `/` makes a path glob, resolved like a deny rule except that
// a relative one matches at any depth anywhere; without `/`, a whole-string glob.
TEST(Load, KafkaAndOtlpSinks) {
  LoadRequest r = request(R"({"audit": {"sinks": [
    {"type": "kafka", "brokers": "k1:9092,k2:9092", "topic": "audit",
     "options": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "spoolMaxMb": 16},
    {"type": "otlp", "url": "https://otel:4318/v1/logs", "headers": {"Authorization": "Bearer t"}}]}})");
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok()) << all(res);
  const auto& sinks = res.policy->audit.sinks;
  ASSERT_EQ(sinks.size(), 2u);
  EXPECT_EQ(sinks[0].type, "kafka");
  EXPECT_EQ(sinks[0].brokers, "k1:9092,k2:9092");
  EXPECT_EQ(sinks[0].topic, "audit");
  EXPECT_EQ(sinks[0].options.at("sasl.mechanism"), "PLAIN");
  EXPECT_EQ(sinks[0].spool_max_mb, 16);
  EXPECT_EQ(sinks[1].type, "otlp");
  EXPECT_EQ(sinks[1].url, "https://otel:4318/v1/logs");
  EXPECT_EQ(sinks[1].headers.at("Authorization"), "Bearer t");
}

TEST(Load, AuditRedact) {
  LoadRequest r = request(R"({"audit": {"redact": [
    "--password=*", "**/secrets/**", "id_rsa*/", "/etc/shadow", "~/.aws", "./build/*.log",
    "--password=*"]}})");
  r.overrides = {"audit.redact+=*token*"};
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok()) << all(res);
  const auto& list = res.policy->audit.redact;
  ASSERT_EQ(list.size(), 7u);  // the repeated entry is kept once
  std::vector<std::string> globs;
  for (const auto& p : list) globs.push_back(p.is_path ? p.glob.pattern() : "string:" + p.pattern);
  EXPECT_EQ(globs, (std::vector<std::string>{"string:--password=*", "/**/secrets/**",
                                             "/**/id_rsa*", "/etc/shadow", "/home/u/.aws",
                                             "/ws/build/*.log", "string:*token*"}));
  EXPECT_TRUE(list[3].glob.isPrefix());  // a path pattern covers what is below it
  EXPECT_EQ(list[1].origin.file, "p.json");
  EXPECT_EQ(list[1].origin.line, 2);

  r.overrides = {"audit.redact=[]"};
  LoadResult replaced = load(r);
  ASSERT_TRUE(replaced.ok()) << all(replaced);
  EXPECT_TRUE(replaced.policy->audit.redact.empty());
}

TEST(Load, OverrideErrors) {
  LoadRequest r = request("", "code-sandbox");
  r.overrides = {"network.mode=bogus", "mode+=audit", "nokey", "filesystem.nope=1",
                 "network..mode=x"};
  LoadResult res = load(r);
  EXPECT_EQ(errors(res),
            (std::vector<std::string>{
                "-o network.mode=bogus: error: invalid value \"bogus\" (expected one of: none, "
                "localhost, allowlist, all)",
                "-o mode+=audit: error: \"+=\" only appends to lists; \"mode\" is not one",
                "-o nokey: error: expected key=value or key+=value",
                "-o filesystem.nope=1: error: unknown key \"nope\" in \"filesystem\" (expected one "
                "of: readableRoots, writableRoots, denyRead, denyWrite, toolchains, caches, secrets)",
                "-o network..mode=x: error: bad key \"network..mode\""}))
      << all(res);
}

TEST(Load, EnvironmentIsTheTopLayer) {
  LoadRequest r = request(R"({"mode": "enforce", "network": {"mode": "allowlist"}})");
  r.overrides = {"mode=enforce"};
  r.env = {{"SUPERVISE_MODE", "audit"}, {"SUPERVISE_NETWORK", "none"},
           {"SUPERVISE_PRESET", "strict"}};
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok()) << all(res);
  EXPECT_EQ(res.policy->mode, Mode::Audit);
  EXPECT_EQ(res.policy->network.mode, NetworkMode::None);
  EXPECT_EQ(res.policy->filesystem.readable_roots.at(0).id, "workspace-read-only");

  r.env = {{"SUPERVISE_MODE", "loud"}, {"SUPERVISE_PRESET", "lax"}};
  res = load(r);
  EXPECT_EQ(errors(res),
            (std::vector<std::string>{
                "preset: error: unknown preset \"lax\" (known: code-sandbox, audit-only, strict, "
                "none)",
                "env:SUPERVISE_MODE: error: invalid value \"loud\" (expected one of: enforce, "
                "audit)"}))
      << all(res);
}

TEST(Load, ProfilesMergeAcrossLayers) {
  LoadRequest r = request(R"({"profiles": {"git": {"network": {"allow": ["github.com:22"]}}},
    "exec": {"switch": [{"match": "/usr/bin/git", "profile": "git"}]}})",
                          "code-sandbox");
  r.files.push_back({"q.json", R"({"profiles": {"git": {"exec": {"allow": ["/usr/bin/ssh"]}}}})"});
  LoadResult res = load(r);
  ASSERT_TRUE(res.ok()) << all(res);
  const Profile& git = res.policy->profiles.at("git");
  EXPECT_EQ(git.network.allow.at(0).id, "profiles.git.network.allow:github.com:22");
  EXPECT_EQ(git.exec.allow.at(0).glob.pattern(), "/usr/bin/ssh");
  EXPECT_EQ(res.policy->exec.switches.at(0).profile, "git");
}

TEST(Load, WorkspaceAndHomeRequirements) {
  LoadRequest r = request(R"({"filesystem": {"readableRoots": ["~/x"]}})");
  r.home.clear();
  LoadResult res = load(r);
  EXPECT_EQ(errors(res), (std::vector<std::string>{"p.json:1:35: error: \"~\" used but the home "
                                                   "directory is unknown"}));
  // The presets' own `~` entries (git config) drop out silently.
  LoadRequest no_home = request("", "code-sandbox");
  no_home.home.clear();
  EXPECT_TRUE(load(no_home).ok());
  r.workspace = "relative";
  res = load(r);
  ASSERT_EQ(errors(res).size(), 1u);
  EXPECT_NE(errors(res)[0].find("workspace must be an absolute path"), std::string::npos);
}

TEST(Load, NeverThrowsOnGarbage) {
  const char* inputs[] = {" ", "null", "\"x\"", "{", "{\"profiles\": []}", "{\"exec\": {\"switch\": [1]}}",
                          "{\"network\": {\"allow\": [{}]}}", "{\"audit\": {\"sinks\": [{\"type\": 3}]}}",
                          "{\"capabilities\": []}", "{\"version\": \"1\"}", "\xff\xfe"};
  for (const char* in : inputs) {
    LoadResult res = load(request(in));
    EXPECT_FALSE(res.ok()) << in;
    EXPECT_FALSE(res.diagnostics.empty()) << in;
  }
}

TEST(Diagnostic, Format) {
  EXPECT_EQ((Diagnostic{"f.json", 3, 7, "bad", false}).format(), "f.json:3:7: error: bad");
  EXPECT_EQ((Diagnostic{"-o x=y", 0, 0, "meh", true}).format(), "-o x=y: warning: meh");
}

}  // namespace
}  // namespace sv::policy
