#!/usr/bin/env bash
# `make check-cuda-link`: compiles and links bertology-server against the
# CUDA-enabled libtorch inside PyPI's torch wheel (the version the lent GPU
# machines carry), with this machine's CUDA 13 toolkit, then runs it on the
# CPU: the binary must load every CUDA library, serve the default model
# with the Debian build's predictions, and refuse --device=cuda with a clear
# error where no GPU is present. No kernel runs here.
#
#   TORCH_VENV   where the wheel is installed (default
#                /var/tmp/bertology-torch-cuda: outside the source tree)
#   TORCH_SPEC   the pip requirement (default torch==2.11.0, CUDA 13.0)
#   BUILD_DIR    the CMake tree (default build-cuda)
# Prints the time each step took.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TORCH_VENV=${TORCH_VENV:-/var/tmp/bertology-torch-cuda}
TORCH_SPEC=${TORCH_SPEC:-torch==2.11.0}
BUILD_DIR=${BUILD_DIR:-build-cuda}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
step() { echo "check-cuda-link: $*"; }

# All in a function, read whole before it runs (an edit of this file during
# a run cannot change what the run does).
main() {
  t0=$(date +%s)
  if ! command -v nvcc >/dev/null; then
    echo "check-cuda-link: no nvcc (CUDA toolkit) under $CUDA_HOME" >&2
    exit 2
  fi
  [ -x "$TORCH_VENV/bin/python" ] || /usr/bin/python3 -m venv "$TORCH_VENV"
  # The whole wheel with its dependencies, as `pip install torch` gives a
  # user: libtorch_cuda.so needs cuSPARSELt, cuFile and NVSHMEM, which the
  # toolkit here lacks; the wheel's nvidia-* packages carry them.
  "$TORCH_VENV/bin/pip" install -q "$TORCH_SPEC"
  # torch's folder, version and CUDA release, the bundled protobuf headers
  # and protoc out of the way (scripts/prepare-libtorch.sh says why), and the
  # CMake arguments for the wheel (scripts/torch-wheel.sh).
  source scripts/torch-wheel.sh
  torch_wheel "$TORCH_VENV/bin/python" || exit 1
  step "torch $TORCH_VERSION (CUDA $TORCH_CUDA) at $TORCH_DIR;" \
    "nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  t1=$(date +%s)
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DBERTOLOGY_BUILD_TESTS=OFF -UProtobuf_PROTOC_EXECUTABLE \
    "${TORCH_CMAKE_ARGS[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" \
    --target bertology-server bertology
  t2=$(date +%s)
  server="$BUILD_DIR/bin/bertology-server"
  step "linked: $(readelf -d "$server" | grep -c NEEDED) libraries;" \
    "$(ldd "$server" | grep -c 'not found') not found"
  ldd "$server" | grep -E 'libtorch_cuda|libc10_cuda|libcudart|libcudnn' || true
  if ldd "$server" | grep -q 'not found'; then
    ldd "$server" | grep 'not found' >&2
    exit 1
  fi
  "$TORCH_VENV/bin/python" "$ROOT/tests/cmake/cuda_link_test.py" \
    --server "$server" --cli "$BUILD_DIR/bin/bertology" \
    --model "$ROOT/models/querytitle-zh-tiny"
  t3=$(date +%s)
  step "passed: wheel $((t1 - t0)) s, build $((t2 - t1)) s, run $((t3 - t2)) s"
}

main "$@"
