# sv_audit: audit events (native JSON schema, OCSF, ECS), process info from
# /proc, and the AuditLog sink pipeline (framing over transports: file with
# rotation, fd, syslog over UDP/TCP/TLS with a spool). Included from
# supervisor/CMakeLists.txt.
find_package(PkgConfig REQUIRED)
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
add_library(sv_audit STATIC
  ${CMAKE_CURRENT_LIST_DIR}/audit_event.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit_log.cpp
  ${CMAKE_CURRENT_LIST_DIR}/process_info.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/ecs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/formats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/ocsf.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/policy_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/redact.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sha256.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sinks/fd_transport.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sinks/gnutls_api.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sinks/net_transport.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sinks/spool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sinks/syslog_frame.cpp)
# GnuTLS: headers only; the library is opened when a TLS sink is (gnutls_api.h).
target_include_directories(sv_audit PRIVATE ${GNUTLS_INCLUDE_DIRS})
target_link_libraries(sv_audit PUBLIC sv_common sv_policy nlohmann_json::nlohmann_json
  PRIVATE ${CMAKE_DL_LIBS})
