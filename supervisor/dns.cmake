# sv_dns: domain entries of the network allowlist (dns_message.* parser and
# query builder, dns_allow.* proxy). Included from supervisor/CMakeLists.txt;
# owned with the network backend (tracer/net.cmake).
include_guard(GLOBAL)
add_library(sv_dns STATIC ${CMAKE_CURRENT_LIST_DIR}/dns_message.cpp
                          ${CMAKE_CURRENT_LIST_DIR}/dns_allow.cpp)
target_include_directories(sv_dns PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(sv_dns PUBLIC sv_common sv_policy sv_net_filter)
