// decodeLineDom(): the nlohmann-DOM decoder that decodeLine() replaced, the
// reference it is tested against (dom_decoder.cpp).
#pragma once

#include <string>
#include <string_view>

#include "supervisor/report/record.h"

namespace sv::report::testing {

bool decodeLineDom(std::string_view line, Record* out, std::string* why);

}  // namespace sv::report::testing
