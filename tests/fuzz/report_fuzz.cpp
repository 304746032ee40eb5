// libFuzzer entry for the line decoder of `supervise report`
// (supervisor/report/record.cpp) and the aggregation and rendering after it.
// A trail is hostile input (paths are attacker-chosen, a file can be edited):
// for any bytes, decodeLine() (RapidJSON's SAX reader) returns without
// crashing, agrees with the nlohmann-DOM decoder of before
// (tests/unit/report/dom_decoder.cpp: same verdict, same why, same record;
// decodeLineExpected() applies no difference now), and once the record is aggregated neither
// view carries a raw '<' from it (HTML) or a control character (terminal).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "supervisor/report/aggregate.h"
#include "supervisor/report/record.h"
#include "supervisor/report/render.h"
#include "tests/unit/report/dom_decoder.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  sv::report::Record record;
  std::string why;
  sv::report::Report report;
  const bool ok = sv::report::decodeLine(line, &record, &why);
  sv::report::Record reference;
  std::string reference_why;
  check(ok == sv::report::testing::decodeLineExpected(line, &reference, &reference_why));
  check(ok ? record == reference : why == reference_why);
  if (ok) {
    check(!record.session_id.empty());
    report.add(record);
  } else {
    check(!why.empty());
    report.addMalformed("f:1", why);
  }
  sv::report::RenderOptions options;
  const std::string text = sv::report::renderText(report, options);
  for (char c : text) check(c == '\n' || static_cast<unsigned char>(c) >= 0x20);
  const std::string html = sv::report::renderHtml(report, options);
  // Every '<' in the page is the renderer's own markup: the record's strings
  // are escaped, so "<script" can't appear however the line is made.
  check(html.find("<script") == std::string::npos);
  check(html.find("<img") == std::string::npos);
  return 0;
}
