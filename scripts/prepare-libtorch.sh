#!/usr/bin/env bash
# Makes an unpacked official libtorch zip fit to build this project against:
#   scripts/prepare-libtorch.sh /opt/libtorch
# Also what scripts/check-cuda-link.sh runs on PyPI's torch wheel (the same
# layout under torch/).
# The zip's include/ carries PyTorch's bundled protobuf headers (3.13, in
# include/google/protobuf). CMake passes Torch's include folders as
# -isystem, which GCC searches before /usr/include, so every file of a
# target linking torch would read that old protobuf instead of the system's
# (3.21, what protoc generated bertology.pb.h with) and stop at the
# generated `#if PROTOBUF_VERSION < 3021000 #error`. Nothing this project
# includes from libtorch needs them (only caffe2's own .pb.h files do).
# docker/Dockerfile.cuda runs this after unpacking; tests/cmake/
# libtorch_prefix_test.sh reproduces the shadowing and checks the fix.
set -euo pipefail
prefix="${1:?usage: prepare-libtorch.sh LIBTORCH_DIR}"
if [ ! -d "$prefix/include" ]; then
  echo "prepare-libtorch: $prefix has no include/ (not an unpacked libtorch)" >&2
  exit 1
fi
if [ -e "$prefix/include/google" ]; then
  rm -rf "$prefix/include/google"
  echo "prepare-libtorch: removed the bundled protobuf headers" \
    "$prefix/include/google"
fi
# Its bin/ carries that protobuf's protoc (3.13) too, which CMake's
# FindProtobuf takes from the prefix before /usr/bin's: the code it
# generates does not build against the system's headers (CMakeLists.txt
# stops at configure when the two differ).
for p in "$prefix"/bin/protoc "$prefix"/bin/protoc-*; do
  [ -e "$p" ] || continue
  rm -f "$p"
  echo "prepare-libtorch: removed the bundled protoc $p"
done
