// Builds and removes the differential test's file tree (fixture.h).
#include "tests/differential/fixture.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

namespace sv::differential {
namespace {

namespace fs = std::filesystem;

Status writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return Error{EIO, "write " + path};
  return {};
}

Status symlinkTo(const std::string& target, const std::string& link) {
  if (::symlink(target.c_str(), link.c_str()) != 0) return errnoError("symlink " + link);
  return {};
}

Status copyProgram(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Error{ec.value(), "copy " + from + " to " + to};
  fs::permissions(to,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (ec) return Error{ec.value(), "chmod " + to};
  return {};
}

Status buildTree(const std::string& root, const std::string& program) {
  const std::string ws = root + "/ws", out = root + "/outside";
  for (const char* dir : {"/ws/src/lib", "/ws/.git/hooks", "/ws/protected", "/ws/secrets",
                          "/ws/tools", "/outside", "/shared", "/meta"}) {
    std::error_code ec;
    fs::create_directories(root + dir, ec);
    if (ec) return Error{ec.value(), "mkdir " + root + dir};
  }
  for (const char* file : {"/src/main.c", "/src/util.c", "/src/lib/deep.c", "/README.md", "/.env",
                           "/.env.local", "/.git/config", "/.git/HEAD", "/.git/hooks/pre-commit",
                           "/protected/notes.txt", "/secrets/api.key", "/src/server.key"})
    SV_TRY(writeFile(ws + file, "fixture\n"));
  SV_TRY(writeFile(out + "/file.txt", "outside\n"));
  SV_TRY(writeFile(root + "/shared/data.txt", "shared\n"));
  SV_TRY(copyProgram(program, ws + "/tools/ok-prog"));
  SV_TRY(copyProgram(program, ws + "/tools/blocked-prog"));
  SV_TRY(copyProgram(program, out + "/prog"));
  SV_TRY(symlinkTo(".env", ws + "/link-env"));
  SV_TRY(symlinkTo("src", ws + "/link-src"));
  SV_TRY(symlinkTo("../outside", ws + "/link-out"));
  SV_TRY(symlinkTo("/etc/hostname", ws + "/link-hostname"));
  SV_TRY(symlinkTo("tools/ok-prog", ws + "/link-ok-prog"));
  SV_TRY(symlinkTo("tools/blocked-prog", ws + "/link-blocked"));
  SV_TRY(symlinkTo("/usr/bin/true", ws + "/link-true"));
  SV_TRY(symlinkTo("/usr/bin/id", ws + "/link-id"));
  SV_TRY(symlinkTo("../ws/.env", out + "/link-in"));
  SV_TRY(symlinkTo("../ws/tools/ok-prog", out + "/link-ok-prog"));
  return {};
}

}  // namespace

Result<Fixture> Fixture::create(const std::string& program, const std::string& parent) {
  std::string tmpl = parent + "/sv-differential-XXXXXX";
  if (!::mkdtemp(tmpl.data())) return errnoError("mkdtemp in " + parent);
  Fixture f{tmpl};  // removes the tree again if building it fails
  SV_TRY(buildTree(f.root_, program));
  auto listeners = UnixListeners::start({f.workspace() + "/sock", f.workspace() + "/.env.sock",
                                         f.outside() + "/sock", f.shared() + "/sock"});
  if (!listeners) return listeners.error();
  f.listeners_ = std::move(*listeners);
  f.dirfds_ = {f.workspace() + "/src", f.outside(), f.workspace() + "/.git", f.shared()};
  return f;
}

Fixture::Fixture(std::string root) : root_(std::move(root)) {}

Fixture::Fixture(Fixture&& other) noexcept
    : root_(std::exchange(other.root_, "")),
      dirfds_(std::move(other.dirfds_)),
      listeners_(std::move(other.listeners_)) {}

Fixture::~Fixture() {
  if (root_.empty() || std::getenv("SV_DIFFERENTIAL_KEEP")) return;
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::string Fixture::policyJson() const {
  // Preset "none" underneath: everything the engine and the backends use is
  // written here, nothing is derived from the launching environment. The
  // outside and meta dirs are readable roots of their own, so the fixture
  // means the same below /tmp (a system read path) and elsewhere (the VM
  // guest's scratch tmpfs).
  return R"({
  "version": 1,
  "mode": "enforce",
  "filesystem": {
    "writableRoots": [{"path": ".", "id": "workspace"}, {"path": ")" +
         shared() +
         R"(", "id": "shared"}],
    "readableRoots": [{"path": ")" +
         outside() + R"(", "id": "outside-read"},
                      {"path": ")" +
         meta() + R"(", "id": "meta-read"}],
    "denyRead": [{"path": "./secrets/**", "id": "deny-read-secrets"}, "*.key"],
    "denyWrite": [
      {"path": ".env", "id": "deny-write-env"},
      {"path": ".env.*", "id": "deny-write-env-variants"},
      {"path": ".git/config", "id": "deny-write-git-config"},
      {"path": ".git/hooks/**", "id": "deny-write-git-hooks"},
      {"path": "./protected", "id": "deny-write-protected"},
      "*.pem"
    ]
  },
  "exec": {
    "allow": ["/usr/bin/**", {"path": "./tools/**", "id": "workspace-tools"}],
    "deny": ["/usr/bin/id", {"path": "./tools/blocked-*", "id": "deny-blocked-tools"}]
  },
  "network": {
    "mode": "allowlist",
    "allow": [{"to": "127.0.0.1:20000-20099", "id": "loopback-range"},
              {"to": "[::1]:20100", "id": "v6-one"}, "127.0.0.0/8:20200"]
  },
  "audit": {"level": "decisions"}
}
)";
}

}  // namespace sv::differential
