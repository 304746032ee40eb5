// gnutls(): see gnutls_api.h.
#include "supervisor/audit/sinks/gnutls_api.h"

#include <dlfcn.h>

#include <string>

namespace sv::supervisor::audit {
namespace {

// The soname Debian 12's libgnutls28-dev links against (package libgnutls30).
constexpr char kLibrary[] = "libgnutls.so.30";

Result<const Gnutls*> load() {
  static Gnutls api;
  void* lib = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    return Error{0, std::string("TLS audit sinks need GnuTLS (Debian package libgnutls30): ") +
                             ::dlerror()};
  auto symbol = [lib](const char* name) -> void* { return ::dlsym(lib, name); };
#define SV_GNUTLS_RESOLVE(name)                                                    \
  api.name = reinterpret_cast<decltype(api.name)>(symbol("gnutls_" #name));        \
  if (api.name == nullptr) return Error{0, std::string(kLibrary) + ": no gnutls_" #name};
  SV_GNUTLS_FUNCTIONS(SV_GNUTLS_RESOLVE)
#undef SV_GNUTLS_RESOLVE
  api.free = static_cast<gnutls_free_function*>(symbol("gnutls_free"));
  if (api.free == nullptr) return Error{0, std::string(kLibrary) + ": no gnutls_free"};
  return &api;  // the library stays loaded: the pointers must outlive every sink
}

}  // namespace

Result<const Gnutls*> gnutls() {
  static const Result<const Gnutls*> loaded = load();
  return loaded;
}

}  // namespace sv::supervisor::audit
