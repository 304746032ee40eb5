// The dynamic loader run as a program: `ld-linux-x86-64.so.2 ./tool ARGS`.
//
// The kernel execs the loader; the loader then maps ./tool itself, with
// open and mmap, in no exec any rule would see. So an exec whose binary is
// the system's loader is decided on the program it names as well, with the
// same exec rules (docs/enforcement.md, "exec"). The program is an argument,
// read from the caller's memory: the decision pins the whole argv (the exec
// re-check kills an exec whose argv changed after the check, proc_abi.h).
//
// Pure: the handler reads argv and resolves the program; these functions
// only say what the loader will do with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sv::supervisor {

// Whether `real_path` is a dynamic loader by its name: glibc's ld-linux*.so*
// (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-linux.so.2), ld.so,
// ld64.so.*, musl's ld-musl-*.so.1. A copy under another name is a program
// the tree brought itself (docs/policy.md, "What an exec deny list cannot
// stop").
bool isDynamicLoader(std::string_view real_path);

struct LoaderProgram {
  size_t index = 0;   // argv index of the program; 0: none (--help, --version, ...)
  std::string error;  // non-empty: refuse the exec, saying this
};

// Which argument the loader will run, parsing its options as glibc's and
// musl's do (--library-path, --preload, --audit, --argv0, ... take a value).
// An option it does not know, or a program named without a '/' (the loader
// would search library directories for it), is an error: the exec is refused
// rather than guessed at.
LoaderProgram loaderProgramOf(const std::vector<std::string>& argv);

}  // namespace sv::supervisor
