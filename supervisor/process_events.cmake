# Process tracking in the session (process_events.{h,cpp}) and the exec
# re-check the notify handler feeds (tracer/proc.cmake). Included from
# supervisor/CMakeLists.txt after sv_supervisor is defined.
if(NOT TARGET sv_proc_tracker)
  include(${CMAKE_SOURCE_DIR}/tracer/proc.cmake)
endif()
target_sources(sv_supervisor PRIVATE ${CMAKE_CURRENT_LIST_DIR}/process_events.cpp)
target_link_libraries(sv_supervisor PUBLIC sv_proc_tracker)
