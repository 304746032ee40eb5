// rdkafka(): see rdkafka_api.h.
#include "supervisor/audit/sinks/rdkafka_api.h"

#include "supervisor/audit/sinks/shared_library.h"

namespace sv::supervisor::audit {
namespace {

// The soname Debian 12's librdkafka-dev links against (package librdkafka1).
constexpr char kLibrary[] = "librdkafka.so.1";

Result<const Rdkafka*> load() {
  static Rdkafka api;
  auto lib = openSharedLibrary(kLibrary, "Kafka audit sinks need librdkafka (Debian package librdkafka1)");
  if (!lib) return lib.error();
#define SV_RDKAFKA_RESOLVE(name) SV_RESOLVE_SYMBOL(api, *lib, kLibrary, "rd_kafka_", name);
  SV_RDKAFKA_FUNCTIONS(SV_RDKAFKA_RESOLVE)
#undef SV_RDKAFKA_RESOLVE
  auto create = sharedSymbol(*lib, kLibrary, "rd_kafka_new");
  if (!create) return create.error();
  api.create = reinterpret_cast<decltype(api.create)>(*create);
  return &api;
}

}  // namespace

Result<const Rdkafka*> rdkafka() {
  static const Result<const Rdkafka*> loaded = load();
  return loaded;
}

}  // namespace sv::supervisor::audit
