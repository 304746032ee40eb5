// mountinfoOnce(); see mountinfo.h.
#include "tracer/mountinfo.h"

#include "common/read_file.h"

namespace sv::tracer {

const std::string& mountinfoOnce() {
  static const std::string text = [] {
    auto read = readWholeFile("/proc/self/mountinfo");
    return read ? std::move(*read) : std::string();
  }();
  return text;
}

}  // namespace sv::tracer
