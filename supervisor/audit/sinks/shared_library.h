// A shared library opened on first use (dlopen) instead of linked.
//
// Why: the dynamic loader maps and relocates every linked library at every
// start-up of supervise, sink or not. Linked, GnuTLS cost 3.6 ms, librdkafka
// 2.5 ms and libcurl-gnutls (with its 20 dependencies) 6 ms per start on the
// test VM (a linked-only `int main(){}` against a bare one), while few
// sessions use those sinks. The headers still come from the -dev packages, so
// every signature is checked at compile time (decltype of the real function).
#pragma once

#include <string>

#include "common/result.h"

namespace sv::supervisor::audit {

// Opens `soname` (RTLD_NOW | RTLD_LOCAL, never closed: the function pointers
// must outlive every sink). `what` names the feature and the Debian package
// for the error, e.g. "Kafka audit sinks need librdkafka (librdkafka1)".
Result<void*> openSharedLibrary(const char* soname, const std::string& what);
// The symbol or an error naming it and the library.
Result<void*> sharedSymbol(void* library, const char* soname, const char* name);

}  // namespace sv::supervisor::audit

// Fills `api.member` with the library's `prefix##member`, or returns the error
// from the enclosing function (which returns a Result).
#define SV_RESOLVE_SYMBOL(api, lib, soname, prefix, member)                                 \
  do {                                                                                     \
    auto sym = ::sv::supervisor::audit::sharedSymbol(lib, soname, prefix #member);        \
    if (!sym) return sym.error();                                                          \
    (api).member = reinterpret_cast<decltype((api).member)>(*sym);                         \
  } while (0)
