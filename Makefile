# The two README commands. Everything real lives in CMake; this file only
# installs dependencies, configures, builds and runs.
BUILD ?= build
JOBS ?= $(shell nproc)
SETUP_STAMP := $(BUILD)/.setup-done

FUZZ_SECONDS ?= 60

.PHONY: all setup build demo test package fuzz sanitize sanitize-build clean

all: build

setup: $(SETUP_STAMP)
$(SETUP_STAMP): tools/setup
	tools/setup
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/CMakeCache.txt: $(SETUP_STAMP)
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# Only what the demo runs: the supervise binary, not the ~400 test targets
# (a fresh machine shows the demo in the time supervise itself takes to build).
demo: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target supervise
	tools/demo $(BUILD)/supervise

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The Debian package, $(BUILD)/supervise_<version>_<arch>.deb (packaging/README.md):
# only the supervise target is built; cpack installs it stripped with its man
# page, completions and docs, and dpkg-shlibdeps derives Depends.
package: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target supervise
	cd $(BUILD) && cpack -G DEB

# libFuzzer (clang, ASan+UBSan): each target runs FUZZ_SECONDS on its seed
# corpus tests/fuzz/corpus/<name>/ (new finds go to build-fuzz/fuzz-corpus/<name>).
FUZZ_TARGETS := policy glob path dns audit notify kernel_audit report otlp serve
fuzz: setup
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DSV_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build-fuzz -j$(JOBS) --target $(FUZZ_TARGETS:%=%_fuzz)
	set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/fuzz-corpus/$$t; \
	  build-fuzz/tests/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	      build-fuzz/fuzz-corpus/$$t tests/fuzz/corpus/$$t; \
	done

# Tests built with ASan and UBSan (any finding fails its test): every label by
# default; CI (.ci/run) runs SANITIZE_LABELS='unit|integration|faults|e2e|escape'
# (all but the vm guest): ~20 min to build (sanitize-build), ~18 min to run on 2 cores.
SANITIZE_LABELS ?=
sanitize-build: setup
	cmake -S . -B build-asan -DSV_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j$(JOBS)

sanitize: sanitize-build
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure -j$(JOBS) $(if $(SANITIZE_LABELS),-L '$(SANITIZE_LABELS)')

clean:
	rm -rf $(BUILD) build-fuzz build-asan

# Overhead of supervise vs native (tools/bench). Its own RelWithDebInfo build dir; installs the
# peers (bubblewrap, firejail, strace, srt with socat and ripgrep) if missing; a full run replaces
# the tables at the top of docs/performance.md.
BENCH_BUILD ?= build-bench
BENCH_ARGS ?=
.PHONY: bench
bench: setup
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BENCH_BUILD) -j$(JOBS) --target supervise supervise-exec
	tools/bench --supervise $(BENCH_BUILD)/supervise --json $(BENCH_BUILD)/bench.json \
	    --install-peers --doc docs/performance.md $(BENCH_ARGS)
