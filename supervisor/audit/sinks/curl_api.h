// libcurl for the OTLP/HTTP audit sink, loaded when the first one is opened
// (shared_library.h says why it is not linked).
#pragma once

#include <curl/curl.h>

#include "common/result.h"

namespace sv::supervisor::audit {

// Every libcurl function the sink calls, by its name without "curl_".
#define SV_CURL_FUNCTIONS(X)                                                           \
  X(global_init) X(easy_init) X(easy_cleanup) X(easy_setopt) X(easy_getinfo) X(free)   \
  X(slist_append) X(slist_free_all) X(multi_init) X(multi_cleanup) X(multi_setopt)     \
  X(multi_add_handle) X(multi_remove_handle) X(multi_socket_action) X(multi_info_read) \
  X(url) X(url_cleanup) X(url_get) X(url_set)

struct Curl {
#define SV_CURL_MEMBER(name) decltype(&::curl_##name) name = nullptr;
  SV_CURL_FUNCTIONS(SV_CURL_MEMBER)
#undef SV_CURL_MEMBER
};

// The library, loaded on the first call (thread-safe) and kept for the
// process's life; an error names the missing library or symbol.
Result<const Curl*> curlApi();

}  // namespace sv::supervisor::audit
