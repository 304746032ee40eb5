// openSharedLibrary(), sharedSymbol(): see shared_library.h.
#include "supervisor/audit/sinks/shared_library.h"

#include <dlfcn.h>

namespace sv::supervisor::audit {

Result<void*> openSharedLibrary(const char* soname, const std::string& what) {
  void* lib = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return Error{0, what + ": " + ::dlerror()};
  return lib;
}

Result<void*> sharedSymbol(void* library, const char* soname, const char* name) {
  void* sym = ::dlsym(library, name);
  if (sym == nullptr) return Error{0, std::string(soname) + ": no " + name};
  return sym;
}

}  // namespace sv::supervisor::audit
