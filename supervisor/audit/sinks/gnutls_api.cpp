// gnutls(): see gnutls_api.h.
#include "supervisor/audit/sinks/gnutls_api.h"

#include "supervisor/audit/sinks/shared_library.h"

namespace sv::supervisor::audit {
namespace {

// The soname Debian 12's libgnutls28-dev links against (package libgnutls30).
constexpr char kLibrary[] = "libgnutls.so.30";

Result<const Gnutls*> load() {
  static Gnutls api;
  auto lib = openSharedLibrary(kLibrary, "TLS audit sinks need GnuTLS (Debian package libgnutls30)");
  if (!lib) return lib.error();
#define SV_GNUTLS_RESOLVE(name) SV_RESOLVE_SYMBOL(api, *lib, kLibrary, "gnutls_", name);
  SV_GNUTLS_FUNCTIONS(SV_GNUTLS_RESOLVE)
#undef SV_GNUTLS_RESOLVE
  auto free_fn = sharedSymbol(*lib, kLibrary, "gnutls_free");  // a variable, not a function
  if (!free_fn) return free_fn.error();
  api.free = static_cast<gnutls_free_function*>(*free_fn);
  return &api;  // the library stays loaded: the pointers must outlive every sink
}

}  // namespace

Result<const Gnutls*> gnutls() {
  static const Result<const Gnutls*> loaded = load();
  return loaded;
}

}  // namespace sv::supervisor::audit
