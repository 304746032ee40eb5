// libFuzzer entry for the OTLP encoder (supervisor/audit/sinks/otlp_encode.h).
// A record normally comes from our own encoder, but the scan must hold for any
// bytes (a spooled file read back, a future format): for every input,
//  - scanRecord() reads nothing past the input and never crashes;
//  - the request body of a batch holding it twice is valid JSON, and its two
//    log records' bodies give the input back when it is valid UTF-8;
//  - an attribute value is valid UTF-8 (RapidJSON validates and unescapes it).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "supervisor/audit/sinks/otlp_encode.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool validUtf8(std::string_view v) {
  try {
    (void)nlohmann::json(std::string(v)).dump();  // throws on invalid UTF-8
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view record(reinterpret_cast<const char*>(data), size);
  const auto f = sv::supervisor::audit::scanRecord(record);
  for (auto v :
       {f.event_id, f.session_id, f.category, f.operation, f.decision, f.rule_id, f.enforced_by})
    check(validUtf8(v));
  sv::supervisor::audit::OtlpBatchEncoder enc({"host", "0.1.0", "sid"});
  enc.append(record, 1);
  enc.append(record, 2);
  std::string body;
  enc.body(body);
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  check(!j.is_discarded());
  const auto& lrs = j["resourceLogs"][0]["scopeLogs"][0]["logRecords"];
  check(lrs.size() == 2);
  bool utf8 = true;  // nlohmann refuses to dump invalid UTF-8
  try {
    (void)nlohmann::json(std::string(record)).dump();
  } catch (const nlohmann::json::exception&) {
    utf8 = false;
  }
  if (utf8) check(lrs[1]["body"]["stringValue"].get<std::string>() == record);
  return 0;
}
