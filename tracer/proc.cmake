# sv_proc_tracker: process tracking and the exec re-check (proc_tracker.{h,cpp})
# over the sv_proc skeleton, with the kernel layout scan (kernel_layout.*) and
# exec file identities (exec_file_id.*). Included from tracer/CMakeLists.txt;
# owned with bpf/progs/proc.bpf.c.
include_guard(GLOBAL)
add_library(sv_proc_tracker STATIC ${CMAKE_CURRENT_LIST_DIR}/proc_tracker.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernel_layout.cpp ${CMAKE_CURRENT_LIST_DIR}/exec_file_id.cpp)
target_include_directories(sv_proc_tracker PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(sv_proc_tracker PUBLIC sv_common sv_bpf_sv_proc sv_bpf_keepers PkgConfig::LIBBPF)
