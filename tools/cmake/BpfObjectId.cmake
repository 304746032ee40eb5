# cmake -DOBJECT=<x.bpf.o> -DNAME=<name> -DOUT=<header> -P BpfObjectId.cmake
#
# Writes <name>.object_id.h: the first 64 bits of the object's SHA-256, which
# name its shared pin directory (tracer/bpf/bpf_shared.h). Computed here once
# rather than by hashing the embedded object at every session start.
file(SHA256 ${OBJECT} hash)
string(SUBSTRING ${hash} 0 16 id)
string(TOUPPER ${NAME} upper)
file(WRITE ${OUT}.tmp
  "// Generated from ${NAME}.bpf.o at build time: do not edit.\n"
  "#pragma once\n"
  "#define ${upper}_OBJECT_ID \"${id}\"\n")
file(RENAME ${OUT}.tmp ${OUT})
