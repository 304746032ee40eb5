# sv_lsm_filter: the BPF-LSM backend loader (lsm_filter.{h,cpp}) over the
# sv_lsm skeleton. Included from tracer/CMakeLists.txt; owned with bpf/progs/lsm.bpf.c.
include_guard(GLOBAL)
add_library(sv_lsm_filter STATIC ${CMAKE_CURRENT_LIST_DIR}/lsm_filter.cpp
            ${CMAKE_CURRENT_LIST_DIR}/lsm_policy_tables.cpp)
target_include_directories(sv_lsm_filter PUBLIC ${CMAKE_SOURCE_DIR})
# sv_net_filter: the allowlist folding (buildNetAllowImage) is shared with the cgroup backend.
if(NOT TARGET sv_net_filter)
  include(${CMAKE_CURRENT_LIST_DIR}/net.cmake)
endif()
target_link_libraries(sv_lsm_filter PUBLIC sv_common sv_policy sv_net_filter sv_bpf_sv_lsm
                      PkgConfig::LIBBPF)
