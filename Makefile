# The two commands: `make demo` and `make test`. Each installs what is
# missing (scripts/install-deps.sh), configures CMake into build/ and builds.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test test-venv demo bench bench-attribution model card format clean \
	check-libtorch-prefix soak test-asan test-asan-quick fuzz image image-test \
	check-debian13 check-cuda-link

# The sanitizer build (clang, ASan + UBSan, libFuzzer targets): one folder
# for `make test`'s part (the asan_quick label: parser and service unit
# tests, each fuzz target for a few seconds), `make test-asan` (every test)
# and `make fuzz` (each target FUZZ_SECONDS, one at a time).
ASAN_BUILD_DIR ?= build-asan
FUZZ_SECONDS ?= 300
LLVM_VERSION ?= $(shell scripts/install-deps.sh --llvm-version)
ASAN_CMAKE_FLAGS ?= -DCMAKE_CXX_COMPILER=clang++-$(LLVM_VERSION) -DBERTOLOGY_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only"
SANITIZER_ENV = env $$(cat $(abspath $(ASAN_BUILD_DIR))/sanitizer.env)

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
	$(MAKE) test-asan-quick

# The Python test environment: Debian's torch, numpy and grpcio plus HF's
# transformers, tokenizers and captum from PyPI (tests/python/
# requirements-hf.txt). CTest makes it before the Python tests; this makes
# it by hand, e.g. for tests/python/*.py run one at a time.
test-venv: deps
	scripts/make-test-venv.sh $(abspath $(BUILD_DIR))/test-venv

$(ASAN_BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN_BUILD_DIR) $(ASAN_CMAKE_FLAGS)

# The part of `make test` under the sanitizers (about 5 minutes from clean).
test-asan-quick: deps $(ASAN_BUILD_DIR)/CMakeCache.txt
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS) --target bertology_asan_quick
	cd $(ASAN_BUILD_DIR) && $(SANITIZER_ENV) \
		ctest --output-on-failure -j 1 -L asan_quick

# Every unit and integration test built and run under ASan + UBSan.
test-asan: deps $(ASAN_BUILD_DIR)/CMakeCache.txt
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS)
	cd $(ASAN_BUILD_DIR) && $(SANITIZER_ENV) ctest --output-on-failure -j 1

# Each fuzz target for FUZZ_SECONDS, one after the other (FUZZERS="a b"
# picks some); findings in $(ASAN_BUILD_DIR)/fuzz/campaign-NAME/artifacts.
fuzz: deps $(ASAN_BUILD_DIR)/CMakeCache.txt
	cmake --build $(ASAN_BUILD_DIR) -j $(JOBS) --target bertology_fuzzers
	$(SANITIZER_ENV) tests/fuzz/run_fuzzers.sh $(abspath $(ASAN_BUILD_DIR)) \
		$(FUZZ_SECONDS) $(FUZZERS)

# The load and fault tests in their long form (make test runs them short):
# tests/load/load_fault_test.cc with a soak of SOAK_S seconds and its other
# faults (SIGTERM under load, a client gone mid-sweep, overload) once per
# minute of it, then the stalled-replica sweep of
# tests/lb/replica_failover_test.cc once per minute. Prints the figures.
SOAK_S ?= 600
SOAK_ENV = BERTOLOGY_SOAK_S=$(SOAK_S) BERTOLOGY_SOURCE_DIR=$(CURDIR) \
	BERTOLOGY_BIN_DIR=$(abspath $(BUILD_DIR))/bin
soak: build
	$(SOAK_ENV) $(BUILD_DIR)/tests/load_fault_test
	$(SOAK_ENV) $(BUILD_DIR)/tests/replica_failover_test \
		--gtest_filter='*Stalled*'

# Builds only what the demo runs (the server and the CLI, no test binary).
demo: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target bertology-server bertology
	scripts/demo.sh $(BUILD_DIR)

# The server image (docker/Dockerfile) with podman, or docker where a daemon
# answers; podman builds on a base image made from Debian's archive
# (scripts/make-base-image.sh). IMAGE, ENGINE and BASE_IMAGE override.
image:
	scripts/build-image.sh

# The image run as an operator runs it (tests/image/image_test.py): read-only
# and non-root, its HEALTHCHECK, the CLI in a second container, the sweep
# Job's parts and merge, TLS and tokens, the drain on stop. Needs root for
# podman and the host binaries to compare with. Not part of `make test`.
image-test: build image
	BERTOLOGY_BIN_DIR=$(abspath $(BUILD_DIR))/bin scripts/image-test.sh

# The whole `make test` in Debian 13 (libtorch 2.6), in a podman container
# made here (scripts/check-debian13.sh); build trees in build-debian13/.
check-debian13:
	scripts/check-debian13.sh

# bertology-server compiled and linked against the CUDA libtorch of PyPI's
# torch wheel (a venv outside the tree) and this machine's CUDA toolkit,
# then run on the CPU beside the Debian build (scripts/check-cuda-link.sh).
check-cuda-link: build
	scripts/check-cuda-link.sh

bench: build test-venv
	scripts/bench.sh $(BUILD_DIR)

# Attribution patching against exact Patch on the shipped model (about 1.5
# minutes on 2 cores; bench/RESULTS.md, "Attribution patching").
bench-attribution: build
	PYTHONPATH=$(BUILD_DIR)/python:client/python /usr/bin/python3 \
	    bench/attribution_patching.py --bin $(BUILD_DIR)/bin --pairs 4

# Re-creates the default model into out/querytitle-zh-tiny and its starting
# point into out/querytitle-zh-tiny-mlm (masked-LM pretraining, then
# fine-tuning; about an hour on 2 cores).
model: build
	scripts/train_default_model.sh $(BUILD_DIR)

# The one command that reproduces the default model's card: regenerates the
# query-title data (seed 1) for the baselines, then measures the model
# through the real server (scripts/make_model_card.py, which runs
# scripts/head_findings.py on the same server) and rewrites
# $(CARD_MODEL)/card.json, sweep/ and analysis/. The training time comes
# from its train_log.json. The data goes to a folder of its own, not the
# one `make model` trains from (the same bytes, but rewritten under a
# running training).
CARD_MODEL ?= models/querytitle-zh-tiny
CARD_DATA ?= out/card-data
card: build
	/usr/bin/python3 scripts/querytitle_data.py $(CARD_DATA) --seed 1
	/usr/bin/python3 scripts/querytitle_baselines.py $(CARD_DATA) \
		> $(CARD_DATA)/baselines.json
	PYTHONPATH=$(BUILD_DIR)/python:client/python /usr/bin/python3 \
		scripts/make_model_card.py --bin $(BUILD_DIR)/bin \
		--model $(CARD_MODEL) --baselines $(CARD_DATA)/baselines.json \
		--sweep-examples 1000 --repeats 5

# Builds server and CLI in a scratch folder against libtorch presented at a
# prefix of its own via CMAKE_PREFIX_PATH, as docker/Dockerfile.cuda does
# with the official CUDA libtorch (make test only configures it).
check-libtorch-prefix: deps
	tests/cmake/libtorch_prefix_test.sh --build

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR)
