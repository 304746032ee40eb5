// libFuzzer entry for the kernel audit record parser (tracer/kernel_audit/
// audit_records.h), the one part of supervise that reads text the supervised tree
// shapes (comm, exe, path bytes in Landlock and seccomp records). The input is lines
// "TYPE TEXT" as the seed corpus (records captured on the dev VM); a line without a
// number becomes a Landlock access record. Properties for every input:
//  - no crash, no sanitizer report, bounded state (open events <= kMaxOpenEvents);
//  - every denial has at most kMaxOtherFields unmodelled fields;
//  - after flushAll() no event stays open;
//  - decodeHex round-trips what it accepts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tracer/kernel_audit/audit_records.h"

namespace {

namespace ka = sv::tracer::kernel_audit;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  ka::RecordAssembler assembler;
  ka::RecordAssembler::Output out;
  while (!input.empty()) {
    size_t nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
    uint16_t type = 1423;
    size_t sp = line.find(' ');
    if (sp != std::string_view::npos && sp > 0 && sp <= 5) {
      unsigned v = 0;
      bool digits = true;
      for (char c : line.substr(0, sp)) {
        if (c < '0' || c > '9') digits = false;
        v = v * 10 + static_cast<unsigned>(c - '0');
      }
      if (digits && v <= 0xffff) {
        type = static_cast<uint16_t>(v);
        line.remove_prefix(sp + 1);
      }
    }
    assembler.feed(type, line, out);
    check(assembler.openEvents() <= ka::RecordAssembler::kMaxOpenEvents);
    auto fields = ka::parseFields(line);
    check(fields.size() <= ka::kMaxFields);
  }
  assembler.flushOlderThan(0, out);
  assembler.flushAll(out);
  check(assembler.openEvents() == 0);
  ka::SessionFilter filter(1);
  for (const auto& d : out.denials) {
    check(d.other.size() <= ka::kMaxOtherFields);
    (void)filter.accept(d, [](int64_t pid) { return pid == 2; });
  }
  // decodeHex: what it accepts re-encodes to the same (upper-cased) text.
  if (auto decoded = ka::decodeHex(std::string_view(reinterpret_cast<const char*>(data), size))) {
    static const char* kHex = "0123456789ABCDEF";
    std::string re;
    for (unsigned char c : *decoded) {
      re.push_back(kHex[c >> 4]);
      re.push_back(kHex[c & 15]);
    }
    std::string up(reinterpret_cast<const char*>(data), size);
    for (char& c : up)
      if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
    check(re == up);
  }
  return 0;
}
