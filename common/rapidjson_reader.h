// <rapidjson/reader.h>, included the one way the project uses it.
//
// RapidJSON 1.1.0's Stack::Reserve() adds to its null pointer before the
// first allocation (fixed upstream after 1.1.0): harmless, but undefined
// behaviour clang's UBSan stops on (report_fuzz, the first line). The check
// is off for RapidJSON's functions only. SSE2 (the x86-64 baseline):
// RapidJSON skips whitespace and copies unescaped string runs 16 bytes at a
// time.
#pragma once

#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_sanitize("pointer-overflow"))), apply_to = function)
#endif
#if defined(__SSE2__) && !defined(RAPIDJSON_SSE2)
#define RAPIDJSON_SSE2
#endif
#include <rapidjson/reader.h>
#if defined(__clang__)
#pragma clang attribute pop
#endif
