// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil): timegm()'s arithmetic without its time-zone machinery.
// A day past the month's end runs on into the next, as timegm() normalizes it.
#pragma once

#include <cstdint>

namespace sv {

constexpr int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

static_assert(daysFromCivil(1970, 1, 1) == 0);
static_assert(daysFromCivil(2000, 3, 1) == 11017);

}  // namespace sv
