// libFuzzer entry for the audit event encoders (native, OCSF, ECS). Paths,
// argv, comm and cwd come from the supervised command and are hostile: any
// bytes (invalid UTF-8, control characters, quotes, NULs), any length. For
// every input and every format:
//  - the record is exactly one line of valid JSON (a SIEM parses each line);
//  - in the native format, a short non-empty valid-UTF-8 path comes back intact
//    once parsed (escaping loses nothing), no path is longer than the limit,
//    and no argv element matching audit.redact (`--secret=*`) is shown.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/audit/formats/formats.h"
#include "supervisor/audit/audit_event.h"
#include "supervisor/proc/process_info.h"

namespace {

using sv::supervisor::AuditEvent;
using sv::supervisor::AuditFormat;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  sv::supervisor::ProcessInfo process;
  process.pid = in.ConsumeIntegral<int>();
  process.tid = in.ConsumeIntegral<int>();
  process.ppid = in.ConsumeIntegral<int>();
  process.uid = in.ConsumeIntegral<uint32_t>();
  process.comm = in.ConsumeRandomLengthString(32);
  process.exe = in.ConsumeRandomLengthString(256);
  process.cwd = in.ConsumeRandomLengthString(256);
  process.profile = in.ConsumeRandomLengthString(16);
  for (int i = in.ConsumeIntegralInRange(0, 4); i > 0; --i)
    process.argv.push_back(in.ConsumeRandomLengthString(64));

  AuditEvent ev;
  static const char* kCategories[] = {"file", "exec", "network", "process"};
  ev.category = kCategories[in.ConsumeIntegralInRange(0, 3)];
  ev.operation = in.ConsumeRandomLengthString(16);
  ev.syscall = in.ConsumeRandomLengthString(16);
  ev.syscall_nr = in.ConsumeIntegral<int>();
  ev.arch = in.ConsumeIntegral<uint32_t>();
  ev.decision = in.ConsumeBool() ? "deny" : "allow";
  ev.enforced_by = "seccomp";
  ev.err = in.ConsumeIntegralInRange(0, 200);
  ev.rule_id = in.ConsumeRandomLengthString(32);
  ev.rule_reason = in.ConsumeRandomLengthString(64);
  ev.default_rule = in.ConsumeBool();
  ev.file.path = in.ConsumeRandomLengthString(2 * sv::supervisor::kAuditMaxPathBytes);
  ev.file.path2 = in.ConsumeRandomLengthString(64);
  ev.file.flags = in.ConsumeIntegral<int>();
  ev.file.mode = in.ConsumeIntegral<int>();
  ev.exec.path = ev.file.path;
  ev.exec.argv = process.argv;
  ev.network.family = "inet";
  ev.network.ip = in.ConsumeRandomLengthString(40);
  ev.network.unix_path = in.ConsumeRandomLengthString(64);
  ev.network.port = in.ConsumeIntegral<int>();
  ev.process = in.ConsumeBool() ? &process : nullptr;

  static const sv::supervisor::Redactor kRedactSecrets({{"--secret=*", false}});
  sv::supervisor::SessionInfo session{"0123456789abcdef0123456789abcdef", "host", "policy",
                                      std::string(64, 'a'), "0.0.0", "boot", kRedactSecrets};
  const timespec now{in.ConsumeIntegralInRange<time_t>(0, 4102444800), 0};
  const uint64_t seq = in.ConsumeIntegral<uint64_t>();

  std::string out;
  for (AuditFormat format : {AuditFormat::Native, AuditFormat::Ocsf, AuditFormat::Ecs}) {
    out.clear();
    sv::supervisor::encodeEventAs(format, out, ev, session, seq, now);
    check(out.find('\n') == std::string::npos);
    const nlohmann::json parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    check(!parsed.is_discarded());
    if (format != AuditFormat::Native) continue;
    const bool short_utf8 = !ev.file.path.empty() && ev.file.path.size() < 256 &&
                            sv::supervisor::isValidUtf8(ev.file.path);
    if (short_utf8 && ev.category == "file")
      check(parsed.value("/file/path"_json_pointer, std::string("\x01")) == ev.file.path);
    const size_t max = sv::supervisor::kAuditMaxPathBytes;
    const std::string b64 = parsed.value("/file/path_b64"_json_pointer, std::string());
    check(b64.empty() ? parsed.value("/file/path"_json_pointer, std::string()).size() <= max
                      : b64.size() <= (max + 2) / 3 * 4);
    for (const auto& arg : parsed.value("/exec/argv"_json_pointer, nlohmann::json::array()))
      check(!arg.get<std::string>().starts_with("--secret="));
  }
  return 0;
}
