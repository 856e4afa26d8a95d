# The two commands: `make demo` and `make test`. Each installs what is
# missing (scripts/install-deps.sh), configures CMake into build/ and builds.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo bench model card format clean \
	check-libtorch-prefix

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
	rm -rf $(BUILD_DIR)
