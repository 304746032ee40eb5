// libFuzzer entry: the input is a policy file, loaded on the code-sandbox
// preset with a few overrides. load() must never crash, hang or throw, and a
// policy it accepts must compile and answer every kind of request.
#include <cstddef>
#include <cstdint>
#include <string>

#include "policy/compile.h"
#include "policy/engine.h"
#include "policy/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sv::policy::LoadRequest req;
  req.files.push_back({"fuzz.json", std::string(reinterpret_cast<const char*>(data), size)});
  req.workspace = "/ws";
  req.home = "/home/u";
  sv::policy::LoadResult res = sv::policy::load(req);
  for (const auto& d : res.diagnostics) (void)d.format();
  if (!res.ok()) return 0;
  (void)sv::policy::toText(sv::policy::compile(*res.policy));
  sv::policy::Engine engine(res.policy);
  sv::policy::Request r;
  for (const char* path : {"/ws/.env", "/ws/a/b", "/usr/bin/ssh", "/etc/passwd", "/"}) {
    r.path = path;
    for (auto op : {sv::policy::Operation::Read, sv::policy::Operation::Write,
                    sv::policy::Operation::Exec}) {
      r.op = op;
      (void)engine.decide(r);
      (void)engine.explain(r);
    }
    r.profile = engine.profileAfterExec("", path);
  }
  r.op = sv::policy::Operation::Connect;
  r.ip = *sv::policy::parseIp("10.1.2.3");
  r.port = 443;
  r.host = "github.com";
  (void)engine.decide(r);
  (void)engine.explain(r);
  return 0;
}
