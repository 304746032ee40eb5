# sv_audit: audit events (native JSON schema), process info from /proc, and
# the AuditLog sink pipeline. Included from supervisor/CMakeLists.txt.
add_library(sv_audit STATIC
  ${CMAKE_CURRENT_LIST_DIR}/audit_event.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit_log.cpp
  ${CMAKE_CURRENT_LIST_DIR}/process_info.cpp)
target_link_libraries(sv_audit PUBLIC sv_common nlohmann_json::nlohmann_json)
