// OTLP/HTTP logs transport (issue 21): audit records as OpenTelemetry log
// records, POSTed gzip'ed as JSON to a collector's /v1/logs with libcurl's
// multi interface, never blocking.
//
// An acknowledging transport (transport.h): write() takes one record into the
// batch being filled; a batch goes out when it holds batch_records records or
// batch_bytes bytes of encoded LogRecords, or linger after its first record
// (up(), called by the AuditLog's flush every <= 50 ms, sees to that). One
// request in flight at a time keeps the order; while it is out and the next
// batch is full, write() returns 0 and the AuditLog's memory queue and spool
// hold the rest. Responses (the OTLP/HTTP spec): 2xx acknowledges the batch
// (a partial success cannot say which records were rejected: one warning on
// stderr, the batch counts as delivered); 429, 502, 503, 504 and transport
// errors (refused, reset, timeout) retry the same batch with exponential
// backoff and jitter, or after Retry-After, and up() is false meanwhile (the
// AuditLog spools); any other status is permanent: the batch's records go to
// takeLost() and the sink's `dropped` record names them. A retried request
// whose response was lost may be delivered twice (at least once).
//
// Threads and fork: curl starts a resolver thread per name lookup. Nothing of
// curl runs in openOtlpTransport() but the URL check (no thread, no global
// state); the multi handle and the first transfer are made in the first up(),
// from the session loop, after the command was cloned and the watchdog
// started (supervisor/session/session.cpp: openAudit, startWatchdog, ...,
// hookEventSources), so no fork happens with curl's threads or locks live.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "supervisor/audit/sinks/otlp_encode.h"
#include "supervisor/audit/sinks/transport.h"

namespace sv::supervisor::audit {

struct OtlpOptions {
  std::string url;                             // http(s)://HOST:PORT/v1/logs
  std::map<std::string, std::string> headers;  // e.g. Authorization
  std::string ca_file;  // https: the collector's CA (PEM); empty: system trust
  OtlpResource resource;
  size_t batch_records = 512;
  size_t batch_bytes = 1u << 20;  // encoded, before gzip
  std::chrono::milliseconds linger{200};
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::seconds max_retry_after{60};  // a longer Retry-After is cut to this
};

// Checks the URL; connects on the first up().
Result<std::unique_ptr<Transport>> openOtlpTransport(OtlpOptions options);

}  // namespace sv::supervisor::audit
