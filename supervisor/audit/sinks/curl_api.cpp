// curlApi(): see curl_api.h.
#include "supervisor/audit/sinks/curl_api.h"

#include "supervisor/audit/sinks/shared_library.h"

namespace sv::supervisor::audit {
namespace {

// The soname Debian 12's libcurl4-gnutls-dev links against (package libcurl3-gnutls).
constexpr char kLibrary[] = "libcurl-gnutls.so.4";

Result<const Curl*> load() {
  static Curl api;
  auto lib = openSharedLibrary(kLibrary,
                               "OTLP audit sinks need libcurl (Debian package libcurl3-gnutls)");
  if (!lib) return lib.error();
#define SV_CURL_RESOLVE(name) SV_RESOLVE_SYMBOL(api, *lib, kLibrary, "curl_", name);
  SV_CURL_FUNCTIONS(SV_CURL_RESOLVE)
#undef SV_CURL_RESOLVE
  return &api;
}

}  // namespace

Result<const Curl*> curlApi() {
  static const Result<const Curl*> loaded = load();
  return loaded;
}

}  // namespace sv::supervisor::audit
