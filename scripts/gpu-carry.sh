#!/usr/bin/env bash
# What scripts/gpu_check.sh needs on the lent GPU machine and that machine
# lacks (no apt, no network, no gRPC / protobuf / abseil headers), fetched
# here into one ignored folder for the device tool to carry (64 MiB limit):
#   DIR/debs/    Debian 12 .debs: the build's C++ dependencies (headers,
#                libraries, protoc, grpc_cpp_plugin, pkgconf) and the shared
#                libraries they load, unpacked there with dpkg -x;
#   DIR/wheels-PY/  HF transformers 4.x and the modules it imports, for
#                the plain PyTorch loop (bench/pytorch_loop.py), for one
#                Python version (the machine's: 3.12), pinned as
#                tests/python/requirements-hf.txt pins them.
# Usage: scripts/gpu-carry.sh [DIR] [PYTHON_VERSION]
#   DIR defaults to build-gpu-carry, PYTHON_VERSION to 3.12. The CPU
#   rehearsal passes this machine's version (gpu_check.sh --rehearse).
set -euo pipefail

# Boost.Graph's max-flow (server/core/attribution/attention_flow.cc) is
# header-only, but libboost1.74-dev is 9 MiB packed, which the 64 MiB do not
# hold: one .deb of just the headers attention_flow.cc includes (g++ -M on
# the installed Boost, the version the build checks) and Boost's CMake
# configs, made with dpkg-deb, unpacked by gpu_check.sh as the others are.
boost_subset() {
  local root=$1 out=$2 tmp
  tmp=$(mktemp -d)
  mkdir -p "$tmp/DEBIAN"
  printf '%s\n' "Package: bertology-boost-headers-subset" "Version: 1.74.0" \
    "Architecture: amd64" "Maintainer: bertology" \
    "Description: the Boost headers attention_flow.cc includes" \
    >"$tmp/DEBIAN/control"
  g++ -std=c++17 -I"$root" -M "$root/server/core/attribution/attention_flow.cc" |
    tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u |
    while read -r f; do
      mkdir -p "$tmp$(dirname "$f")" && cp "$f" "$tmp$f"
    done
  local cmake=/usr/lib/x86_64-linux-gnu/cmake
  mkdir -p "$tmp$cmake"
  cp -r "$cmake/Boost-1.74.0" "$cmake/boost_headers-1.74.0" \
    "$cmake/BoostDetectToolset-1.74.0.cmake" "$tmp$cmake/"
  dpkg-deb --build --root-owner-group "$tmp" \
    "$out/bertology-boost-headers-subset_1.74.0_amd64.deb" >/dev/null
  rm -rf "$tmp"
}

main() {
  local root dir py
  root=$(cd "$(dirname "$0")/.." && pwd)
  dir=${1:-$root/build-gpu-carry}
  py=${2:-3.12}
  mkdir -p "$dir/debs" "$dir/wheels-$py"
  # The build's dependencies as server/ and proto/ find them (CMakeLists.txt)
  # plus what their CMake configs find in turn (gRPC: c-ares, re2, OpenSSL,
  # ZLIB; prometheus-cpp: civetweb, CURL), and the run-time libraries of
  # those that a machine without Debian may lack (libmicrohttpd's GnuTLS);
  # CLI11 (header-only: the CLI's flags); SentencePiece (the XLM-R
  # tokenizer's library). Boost: boost_subset.
  local debs=(
    libgrpc++-dev libgrpc-dev libgrpc++1.51 libgrpc29 protobuf-compiler-grpc
    libprotobuf-dev libprotobuf32 libprotoc32 protobuf-compiler
    libabsl-dev libabsl20220623 libc-ares-dev libc-ares2 libre2-dev libre2-9
    libssl-dev libssl3 zlib1g-dev zlib1g
    prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
    libprometheus-cpp-push1.0 civetweb libcivetweb-dev libcivetweb1
    libcurl4-openssl-dev libcurl4
    libmicrohttpd-dev libmicrohttpd12 libgnutls30 libhogweed6 libnettle8
    libp11-kit0 libtasn1-6 libidn2-0 libunistring2 libgmp10 libffi8
    nlohmann-json3-dev libutf8proc-dev libutf8proc2 libgtest-dev libgmock-dev
    pkgconf pkgconf-bin libpkgconf3 libcli11-dev
    libsentencepiece-dev libsentencepiece0
  )
  (cd "$dir/debs" && rm -f ./*.deb && apt-get download "${debs[@]}" >/dev/null)
  boost_subset "$root" "$dir/debs"
  # The plain loop's pins, which win over what the machine has (its image
  # holds transformers 5, which has no head_mask, and tokenizers and
  # huggingface_hub too new for 4.46.3), and the small modules they import,
  # used only where the machine lacks them (device/KINDS.md lists numpy,
  # pyyaml, requests and the rest there already).
  local reqs="$root/tests/python/requirements-hf.txt"
  local pins=()
  for p in transformers tokenizers safetensors huggingface_hub regex \
           filelock packaging tqdm fsspec; do
    pins+=("$(grep -E "^$p==" "$reqs")")
  done
  rm -f "$dir/wheels-$py"/*.whl
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version "$py" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d "$dir/wheels-$py" "${pins[@]}"
  # The device tool's 64 MiB hold the working tree (tracked and untracked,
  # not ignored files) and the carried paths together.
  local bytes tree
  bytes=$(du -sb "$dir/debs" "$dir/wheels-$py" | awk '{s += $1} END {print s}')
  tree=$(cd "$root" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 du -cb 2>/dev/null | awk 'END {print $1}')
  echo "gpu-carry: $(ls "$dir/debs" | wc -l) debs, $(ls "$dir/wheels-$py" |
    wc -l) wheels (Python $py): $((bytes / 1048576)) MiB in $dir; with the" \
    "working tree $(((bytes + tree) / 1048576)) MiB to carry"
  if [ $((bytes + tree)) -gt $((64 * 1048576)) ]; then
    echo "gpu-carry: over the device tool's 64 MiB" >&2
    exit 1
  fi
}

main "$@"
