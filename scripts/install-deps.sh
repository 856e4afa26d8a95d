#!/usr/bin/env bash
# Installs every Debian package the project needs to build, test and demo.
# Idempotent: packages already present are skipped, and apt-get update runs
# at most once, only when something is missing. Used by the Makefile, CI and
# the Dockerfiles, so the list lives here and nowhere else.
#
#   install-deps.sh               build, test and demo packages (make, CI)
#   install-deps.sh --build-only  only the build packages, without
#                                 recommends (the Docker build stages)
#   install-deps.sh --no-torch    ...without Debian's libtorch-dev, for a
#                                 libtorch given by -DCMAKE_PREFIX_PATH
#                                 (docker/Dockerfile.cuda)
#   install-deps.sh --image       only what `make image` / `make image-test`
#                                 need where no Docker daemon runs: podman,
#                                 runc and debootstrap
#   install-deps.sh --llvm-version  print the clang/LLVM major version of
#                                 the sanitizer build on this release
#   install-deps.sh --list [...]  print the packages the options select
#                                 and exit (deploy/validate.py checks them)
set -euo pipefail

BUILD_ONLY=0 NO_TORCH=0 LIST=0 IMAGE=0 LLVM_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --build-only) BUILD_ONLY=1 ;;
    --no-torch) NO_TORCH=1 ;;
    --list) LIST=1 ;;
    --image) IMAGE=1 ;;
    --llvm-version) LLVM_ONLY=1 ;;
    *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

# The LLVM release of the sanitizer and fuzzing build: the one this Debian
# release packages as clang-N / libclang-rt-N-dev / llvm-N (12: 14, 13: 19).
# `--llvm-version` prints it (the Makefile's clang++-N).
LLVM=14
if grep -qs '^VERSION_CODENAME=trixie' /etc/os-release; then LLVM=19; fi
if [ "$LLVM_ONLY" = 1 ]; then echo "$LLVM"; exit 0; fi
# Build and runtime libraries.
BUILD_PKGS=(
  build-essential cmake pkg-config
  libtorch-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libmicrohttpd-dev libabsl-dev
  # SHA-256 and CRYPTO_memcmp for bearer tokens (token_file.h).
  libssl-dev
  nlohmann-json3-dev libutf8proc-dev
  # XLM-RoBERTa's SentencePiece tokenizer (server/core/tokenizer/
  # sentencepiece_model.cc); its runtime libsentencepiece0 reaches the
  # image through docker/Dockerfile's ldd list once a binary links it.
  libsentencepiece-dev
  # RoBERTa's byte-level BPE pre-tokenisation, \p{L}/\p{N} (server/core/
  # tokenizer/byte_level_bpe.cc). libgrpc++-dev pulls it in too, but the
  # core (BERTOLOGY_CORE_ONLY) uses it directly.
  libre2-dev
  # The CLI's flags (client/cli/args.cc): header-only.
  libcli11-dev
  # Boost.Graph's Boykov-Kolmogorov max-flow for attention flow
  # (server/core/attribution/): header-only there, found through Boost's
  # own CMake config (1.74 on Debian 12, 1.83 on 13).
  libboost-graph-dev
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
  # `pip install --no-build-isolation client/python` builds the client
  # package with these (and protoc + grpc_python_plugin, above).
  python3-setuptools python3-wheel
  # The test venv (scripts/make-test-venv.sh): HF's libraries from PyPI
  # beside these system packages.
  python3-venv
  nginx
  # deploy/validate.py reads the rendered manifests.
  python3-yaml
  # Makes the CA, server and client certificates of tests/python/test_auth.py.
  openssl
  # The sanitizer and fuzzing build (build-asan/: make test's ASan part,
  # make test-asan, make fuzz): clang, its ASan/UBSan/libFuzzer run-times
  # and llvm-symbolizer for the reports' stacks.
  "clang-$LLVM" "libclang-rt-$LLVM-dev" "llvm-$LLVM"
)
# Installed without recommends: their recommends pull in hundreds of MB.
# python3-pandas: the Python client's optional to_frame() output, tested.
NORECOMMENDS_PKGS=(prometheus chromium python3-pandas)

if [ "$IMAGE" = 1 ]; then
  # Debian 12's podman (4.3) with runc (docker/podman-containers.conf says
  # why not crun), and debootstrap for the base image
  # (scripts/make-base-image.sh).
  BUILD_PKGS=(podman runc debootstrap)
  TEST_PKGS=()
  NORECOMMENDS_PKGS=()
fi
if [ "$NO_TORCH" = 1 ]; then
  kept=()
  for p in "${BUILD_PKGS[@]}"; do [ "$p" = libtorch-dev ] || kept+=("$p"); done
  BUILD_PKGS=("${kept[@]}")
fi
if [ "$BUILD_ONLY" = 1 ]; then
  TEST_PKGS=()
  # Build packages without their recommends (a leaner image stage).
  NORECOMMENDS_PKGS=("${BUILD_PKGS[@]}")
  BUILD_PKGS=()
elif [ "$IMAGE" = 0 ]; then
  # The deploy test (deploy/validate.sh) renders the manifests with kubectl
  # and checks them with npm packages. Debian's kubernetes-client and npm
  # only where no kubectl / npm is on PATH: they conflict with other
  # installs of the same tools (e.g. kubectl 1.32, nodesource's nodejs).
  command -v kubectl >/dev/null || TEST_PKGS+=(kubernetes-client)
  command -v npm >/dev/null || TEST_PKGS+=(nodejs npm)
fi
if [ "$LIST" = 1 ]; then
  printf '%s\n' "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" \
    "${NORECOMMENDS_PKGS[@]}" | grep -v '^$' || true
  exit 0
fi

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
