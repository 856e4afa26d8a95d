#!/usr/bin/env bash
# Installs every Debian package the project needs to build, test and demo.
# Idempotent: packages already present are skipped, and apt-get update runs
# at most once, only when something is missing. Used by the Makefile, CI and
# the Dockerfile, so the list lives here and nowhere else.
set -euo pipefail

# Build and runtime libraries.
BUILD_PKGS=(
  build-essential cmake pkg-config
  libtorch-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libabsl-dev
  nlohmann-json3-dev libutf8proc-dev
  libgtest-dev libgmock-dev
  # libtorch 1.13 links the generic libblas.so.3; without an optimised
  # provider matrix products fall back to the reference BLAS (~25x slower).
  # The pthread flavour, not -openmp: bench/blas_flavour.py (BERT-shaped
  # GEMMs, 2 threads) measured them level within noise on this 2-core box
  # (pthread 187/82 GFLOP/s, openmp 170/86 in two interleaved runs under
  # load; reference BLAS 5-7). pthread keeps OpenBLAS's pool separate from
  # libtorch's GNU OpenMP pool, so OPENBLAS_NUM_THREADS tunes it alone; the
  # two pools spin against each other when both are 2 wide on 2 cores
  # (README, Performance), which is what matters more here.
  libopenblas0-pthread
)
# Tools the tests drive: the Python reference (goldens, second gRPC stack),
# promtool, a real L7 load balancer and a headless browser.
TEST_PKGS=(
  python3 python3-torch python3-numpy python3-grpcio python3-protobuf
  nginx
)
# Installed without recommends: their recommends pull in hundreds of MB.
NORECOMMENDS_PKGS=(prometheus chromium)

missing() {
  local out=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
  done
  echo "${out[@]:-}"
}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need=$(missing "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}")
need_nr=$(missing "${NORECOMMENDS_PKGS[@]}")
if [ -z "$need" ] && [ -z "$need_nr" ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing:${need:+ $need}${need_nr:+ $need_nr}"
$SUDO apt-get update -qq
if [ -n "$need" ]; then
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq $need >/dev/null
fi
if [ -n "$need_nr" ]; then
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq --no-install-recommends $need_nr >/dev/null
fi
# nginx's package starts a system instance on :80; the tests start their own.
if command -v systemctl >/dev/null && systemctl is-active --quiet nginx 2>/dev/null; then
  $SUDO systemctl stop nginx || true
fi
echo "install-deps: done"
