#!/usr/bin/env bash
# The build against a libtorch given by -DCMAKE_PREFIX_PATH, as a GPU image
# builds against the official CUDA libtorch (docker/Dockerfile.cuda). No
# other libtorch exists here, so Debian's is presented at a prefix of its
# own (include/ and lib/ linked from /usr), which only CMAKE_PREFIX_PATH
# can find first:
#   1. the whole project (server, CLI, not only the core) configures
#      against it, and Torch comes from that prefix;
#   2. a libtorch built with the pre-cxx11 ABI is refused with a message
#      naming the fix, unless only the core is built.
# Configure-only by default (seconds); with --build it also compiles and
# links bertology-server and bertology there (`make check-libtorch-prefix`,
# about as long as a clean build).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

prefix="$tmp/libtorch"
mkdir -p "$prefix"
ln -s /usr/include "$prefix/include"
ln -s /usr/lib "$prefix/lib"

echo "== 1. configure the whole project with CMAKE_PREFIX_PATH=$prefix"
cmake -S "$src" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DBERTOLOGY_BUILD_TESTS=OFF >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; exit 1; }
torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$tmp/build/CMakeCache.txt")
echo "Torch_DIR=$torch_dir"
case "$torch_dir" in
  "$prefix"/*) ;;
  *) echo "FAIL: Torch was not taken from CMAKE_PREFIX_PATH"; exit 1 ;;
esac
targets=$(cmake --build "$tmp/build" --target help)
for t in bertology-server bertology bertology_model bertology_service; do
  grep -q "^\.\.\. $t\$" <<<"$targets" ||
    { echo "FAIL: no target $t in the prefix-path build"; exit 1; }
done
echo "OK: server, CLI, core and service targets against $prefix"
if [ "${1:-}" = "--build" ]; then
  cmake --build "$tmp/build" -j "$(nproc)" --target bertology-server bertology
  "$tmp/build/bin/bertology-server" --help >/dev/null
  echo "OK: bertology-server and bertology built and run against $prefix"
fi

echo "== 2. a pre-cxx11-ABI libtorch is refused"
old="$tmp/old-abi/share/cmake/Torch"
mkdir -p "$old"
cat >"$old/TorchConfig.cmake" <<'CMAKE'
# Stands in for an official pre-cxx11 libtorch: the same flag and target.
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")
if(NOT TARGET torch)
  add_library(torch INTERFACE IMPORTED)
  set_property(TARGET torch PROPERTY INTERFACE_COMPILE_OPTIONS
    "${TORCH_CXX_FLAGS}")
endif()
set(TORCH_LIBRARIES torch)
set(TORCH_INCLUDE_DIRS "")
set(Torch_FOUND TRUE)
CMAKE
if cmake -S "$src" -B "$tmp/old" -DCMAKE_PREFIX_PATH="$tmp/old-abi" \
    -DBERTOLOGY_BUILD_TESTS=OFF >"$tmp/old.log" 2>&1; then
  echo "FAIL: the pre-cxx11 libtorch was accepted for the server"; exit 1
fi
grep -q "pre-C++11 ABI" "$tmp/old.log" ||
  { cat "$tmp/old.log"; echo "FAIL: no ABI message"; exit 1; }
grep -o "libtorch-cxx11-abi-shared-with-deps[^ ]*" "$tmp/old.log" | head -1
cmake -S "$src" -B "$tmp/old-core" -DCMAKE_PREFIX_PATH="$tmp/old-abi" \
  -DBERTOLOGY_CORE_ONLY=ON -DBERTOLOGY_BUILD_TESTS=OFF >"$tmp/core.log" 2>&1 ||
  { cat "$tmp/core.log"; echo "FAIL: core-only refused"; exit 1; }
echo "OK: refused for the server, accepted for the core alone"
