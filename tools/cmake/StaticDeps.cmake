# sv_use_static_archives(<prefix>): points the imported target
# PkgConfig::<prefix> (from pkg_check_modules) at the module's static
# archives (pkg-config --static), e.g. libbpf.a + libelf.a + libz.a.
#
# Why: supervise is started once per supervised command, and the dynamic
# loader mapping and relocating each shared library is paid at every
# start-up (docs/performance.md, "Start-up in session 5"). libc's own parts
# (pthread, dl, rt, m) stay shared.
function(sv_use_static_archives prefix)
  set(archives)
  foreach(lib IN LISTS ${prefix}_STATIC_LIBRARIES)
    if(lib MATCHES "^(pthread|dl|rt|m|c)$")
      list(APPEND archives ${lib})
      continue()
    endif()
    find_library(SV_STATIC_${lib} NAMES lib${lib}.a HINTS ${${prefix}_STATIC_LIBRARY_DIRS})
    if(NOT SV_STATIC_${lib})
      message(FATAL_ERROR "SV_STATIC_DEPS: no lib${lib}.a for ${prefix} "
                          "(configure with -DSV_STATIC_DEPS=OFF to link the shared library)")
    endif()
    list(APPEND archives ${SV_STATIC_${lib}})
  endforeach()
  set_target_properties(PkgConfig::${prefix} PROPERTIES INTERFACE_LINK_LIBRARIES "${archives}")
endfunction()
