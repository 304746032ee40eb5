// GnuTLS for the TLS audit sinks, loaded when the first one is opened
// (shared_library.h says why it is not linked).
#pragma once

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common/result.h"

namespace sv::supervisor::audit {

// Every GnuTLS function the sinks call, by its name without "gnutls_".
#define SV_GNUTLS_FUNCTIONS(X)                                                            \
  X(init) X(deinit) X(set_default_priority) X(credentials_set) X(server_name_set)         \
  X(session_set_verify_cert) X(transport_set_int2)X(handshake) X(error_is_fatal)           \
  X(strerror) X(session_get_verify_cert_status) X(certificate_verification_status_print)  \
  X(record_send) X(record_get_direction) X(certificate_allocate_credentials)              \
  X(certificate_free_credentials) X(certificate_set_x509_system_trust)                    \
  X(certificate_set_x509_trust_file)

struct Gnutls {
#define SV_GNUTLS_MEMBER(name) decltype(&::gnutls_##name) name = nullptr;
  SV_GNUTLS_FUNCTIONS(SV_GNUTLS_MEMBER)
#undef SV_GNUTLS_MEMBER
  gnutls_free_function* free = nullptr;  // a variable in the library, not a function
};

// The library, loaded on the first call (thread-safe) and kept for the
// process's life; an error names the missing library or symbol.
Result<const Gnutls*> gnutls();

}  // namespace sv::supervisor::audit
