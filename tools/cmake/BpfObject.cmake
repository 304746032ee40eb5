# BpfObject.cmake: compile BPF C programs into a libbpf skeleton header.
#
#   sv_add_bpf_skeleton(<name> SOURCES a.bpf.c [b.bpf.c ...])
#
# Each source is compiled with clang -target bpf (CO-RE against the checked-in
# bpf/vmlinux/<arch>/vmlinux.h, never the build host's /sys/kernel/btf), with a
# depfile so header edits rebuild; `bpftool gen object` links the objects into
# one, and `bpftool gen skeleton` writes <name>.skel.h, and <name>.object_id.h
# the object's id (BpfObjectId.cmake). Consumers link the
# INTERFACE target sv_bpf_<name>, which carries the include directory and the
# build-order dependency on the generated header.
include_guard(GLOBAL)

find_program(SV_BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(SV_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

set(SV_BPF_ARCH x86)
# Relative to this file, so the function works from any including project.
get_filename_component(SV_BPF_SOURCE_ROOT ${CMAKE_CURRENT_LIST_DIR}/../../bpf ABSOLUTE)

function(sv_add_bpf_skeleton name)
  cmake_parse_arguments(B "" "" "SOURCES" ${ARGN})
  if(NOT B_SOURCES)
    message(FATAL_ERROR "sv_add_bpf_skeleton(${name}): no SOURCES")
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/skel/${name})
  file(MAKE_DIRECTORY ${out_dir})

  # libbpf's own headers (bpf_helpers.h ...): after ours, never the host's
  # arch-specific asm headers, since vmlinux.h already defines the types.
  set(libbpf_inc /usr/include)
  if(LIBBPF_INCLUDEDIR)
    set(libbpf_inc ${LIBBPF_INCLUDEDIR})
  endif()

  set(objects)
  foreach(src IN LISTS B_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    get_filename_component(base ${src} NAME)
    string(REGEX REPLACE "\\.c$" ".o" obj_name ${base})
    set(obj ${out_dir}/${obj_name})
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${SV_BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${SV_BPF_ARCH} -mcpu=v3
              -Wall -Werror
              -I${SV_BPF_SOURCE_ROOT} -I${SV_BPF_SOURCE_ROOT}/vmlinux/${SV_BPF_ARCH}
              -idirafter ${libbpf_inc}
              # <asm/types.h>, for programs that use UAPI headers instead of vmlinux.h
              -idirafter /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}
              -MD -MF ${obj}.d -MT ${obj}
              -c ${abs} -o ${obj}
      DEPENDS ${abs}
      DEPFILE ${obj}.d
      COMMENT "BPF ${base}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()

  set(linked ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${linked}
    COMMAND ${SV_BPFTOOL} gen object ${linked} ${objects}
    DEPENDS ${objects}
    COMMENT "BPF link ${name}.bpf.o"
    VERBATIM)
  # Through a temp file: a failed bpftool must not leave a half header behind.
  add_custom_command(
    OUTPUT ${skel}
    COMMAND sh -c "${SV_BPFTOOL} gen skeleton ${linked} name ${name} > ${skel}.tmp && mv ${skel}.tmp ${skel}"
    DEPENDS ${linked}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)

  set(object_id ${out_dir}/${name}.object_id.h)
  add_custom_command(
    OUTPUT ${object_id}
    COMMAND ${CMAKE_COMMAND} -DOBJECT=${linked} -DNAME=${name} -DOUT=${object_id}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/BpfObjectId.cmake
    DEPENDS ${linked} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/BpfObjectId.cmake
    COMMENT "BPF object id ${name}"
    VERBATIM)
  add_custom_target(sv_bpf_${name}_gen DEPENDS ${skel} ${object_id})
  add_library(sv_bpf_${name} INTERFACE)
  target_include_directories(sv_bpf_${name} INTERFACE ${out_dir} ${SV_BPF_SOURCE_ROOT})
  add_dependencies(sv_bpf_${name} sv_bpf_${name}_gen)
endfunction()
