# The two README commands. Everything real lives in CMake; this file only
# installs dependencies, configures, builds and runs.
BUILD ?= build
JOBS ?= $(shell nproc)
SETUP_STAMP := $(BUILD)/.setup-done

.PHONY: all setup build demo test fuzz sanitize bench clean

all: build

setup: $(SETUP_STAMP)
$(SETUP_STAMP): tools/setup
	tools/setup
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/CMakeCache.txt: $(SETUP_STAMP)
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	tools/demo $(BUILD)/supervise

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD)
