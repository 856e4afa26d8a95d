# shellcheck shell=bash disable=SC2034  # sets variables for the caller
# Sourced by scripts/check-cuda-link.sh and scripts/gpu_check.sh: what
# building against the libtorch inside PyPI's torch wheel takes.
#   torch_wheel PYTHON
# sets TORCH_DIR (the torch package), TORCH_VERSION, TORCH_CUDA (its CUDA
# release) and the array TORCH_CMAKE_ARGS (the prefix, nvcc, and the
# wheel's nvidia-* libraries for the linker to resolve libtorch_cuda's
# needs), after scripts/prepare-libtorch.sh has taken the wheel's bundled
# protobuf headers and protoc out of the way. Returns 1 when torch does not
# import from PYTHON.
torch_wheel() {
  local py=$1 nvidia_libs
  TORCH_DIR=
  read -r TORCH_DIR TORCH_VERSION TORCH_CUDA < <("$py" -c 'import os, torch
print(os.path.dirname(torch.__file__), torch.__version__, torch.version.cuda)' \
    2>/dev/null) || true
  if [ -z "$TORCH_DIR" ]; then
    echo "torch does not import from $py" >&2
    return 1
  fi
  "$(dirname "${BASH_SOURCE[0]}")/prepare-libtorch.sh" "$TORCH_DIR"
  nvidia_libs=$(find "$(dirname "$TORCH_DIR")" -path '*/nvidia/*/lib' \
    -type d | sort | paste -sd: -)
  TORCH_CMAKE_ARGS=(-DCMAKE_PREFIX_PATH="$TORCH_DIR"
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc)"
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$nvidia_libs")
}
