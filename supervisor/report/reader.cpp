// forEachLine(), readTrail() (reader.h).
#include "supervisor/report/reader.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "supervisor/report/aggregate.h"
#include "supervisor/report/record.h"

namespace sv::report {

bool forEachLine(const std::string& path,
                 const std::function<void(std::string_view, uint64_t)>& on_line,
                 const std::function<void(uint64_t)>& on_too_long, std::string* error) {
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<char> buf(1 << 20);
  std::string pending;  // a line cut by the buffer's end
  bool skipping = false;  // inside a line past kMaxLine
  uint64_t number = 0;
  size_t got;
  while ((got = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    std::string_view chunk(buf.data(), got);
    while (!chunk.empty()) {
      const size_t nl = chunk.find('\n');
      const std::string_view part = chunk.substr(0, nl);
      if (!skipping) {
        if (pending.size() + part.size() > kMaxLine) {
          skipping = true;
          pending.clear();
          pending.shrink_to_fit();
        } else if (nl != std::string_view::npos && pending.empty()) {
          on_line(part, ++number);  // the common case: no copy
        } else {
          pending.append(part);
          if (nl != std::string_view::npos) {
            on_line(pending, ++number);
            pending.clear();
          }
        }
      }
      if (nl == std::string_view::npos) break;
      if (skipping) {
        on_too_long(++number);
        skipping = false;
      }
      chunk.remove_prefix(nl + 1);
    }
  }
  const bool failed = std::ferror(f);
  if (skipping) on_too_long(++number);
  else if (!pending.empty()) on_line(pending, ++number);  // no final newline
  if (f != stdin) std::fclose(f);
  if (failed) {
    *error = "error reading " + path;
    return false;
  }
  return true;
}

bool readTrail(const std::string& path, Report* report, std::string* error) {
  report->setSource(path);
  Record record;
  std::string why;
  return forEachLine(
      path,
      [&](std::string_view line, uint64_t number) {
        if (line.empty()) return;
        if (decodeLine(line, &record, &why))
          report->add(record);
        else
          report->addMalformed(path + ":" + std::to_string(number), why);
      },
      [&](uint64_t number) {
        report->addMalformed(path + ":" + std::to_string(number),
                             "longer than " + std::to_string(kMaxLine) + " bytes");
      },
      error);
}

}  // namespace sv::report
