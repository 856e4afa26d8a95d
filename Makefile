# The two commands: `make demo` and `make test`. Each installs what is
# missing (scripts/install-deps.sh), configures CMake into build/ and builds.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo bench model format clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j 1

demo: build
	scripts/demo.sh $(BUILD_DIR)

bench: build
	scripts/bench.sh $(BUILD_DIR)

# Re-creates the default model into out/querytitle-zh-tiny (~30 min).
model: build
	scripts/train_default_model.sh $(BUILD_DIR)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
