# sv_audit: audit events (native JSON schema, OCSF, ECS), process info from
# /proc, and the AuditLog sink pipeline. Included from supervisor/CMakeLists.txt.
add_library(sv_audit STATIC
  ${CMAKE_CURRENT_LIST_DIR}/audit_event.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit_log.cpp
  ${CMAKE_CURRENT_LIST_DIR}/process_info.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/ecs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/formats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/ocsf.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/policy_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/audit/sha256.cpp)
target_link_libraries(sv_audit PUBLIC sv_common sv_policy nlohmann_json::nlohmann_json)
