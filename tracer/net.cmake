# sv_net_filter: the cgroup socket-hook network backend (net_filter.{h,cpp}).
# Included from tracer/CMakeLists.txt; owned separately so the BPF side and its
# loader move together.
include_guard(GLOBAL)
add_library(sv_net_filter STATIC ${CMAKE_CURRENT_LIST_DIR}/net_filter.cpp)
target_link_libraries(sv_net_filter PUBLIC sv_common sv_bpf_sv_net sv_bpf_keepers PkgConfig::LIBBPF)
