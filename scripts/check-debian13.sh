#!/usr/bin/env bash
# `make check-debian13`: the whole `make test` in Debian 13 (trixie), whose
# libtorch is 2.6 (Debian 12's is 1.13), in a podman container made here:
#   1. the base image from Debian's archive (scripts/make-base-image.sh,
#      SUITE=trixie);
#   2. docker/Dockerfile.debian13: the project's packages installed by
#      scripts/install-deps.sh, cached as an image;
#   3. the working tree (tracked and untracked, not ignored files) copied
#      into build-debian13/src, and `make test` run there with the build
#      trees kept in it, so a rerun builds only what changed.
# ../shared (BERTOLOGY_SHARED_DIR) is mounted read-only beside the copy, for
# the fixtures and the vendored npm cache.
# Prints the time each step took.
set -euo pipefail

# All in a function, read whole before it runs: an edit of this file during
# a run (it takes half an hour) cannot change what the run does.
main() {
  source "$(dirname "$0")/container-engine.sh"
  cd "$ROOT"
  [ "$ENGINE" = podman ] || { echo "check-debian13: needs podman" >&2; exit 2; }
  SHARED=${BERTOLOGY_SHARED_DIR:-$(cd "$ROOT/.." && pwd)/shared}
  DEV_IMAGE=localhost/bertology-dev:trixie
  WORK="$ROOT/build-debian13"

  t0=$(date +%s)
  SUITE=trixie BASE_IMAGE=localhost/debian:trixie-minbase \
    scripts/make-base-image.sh
  t1=$(date +%s)
  $ENGINE build --network=host --format docker \
    --build-arg BASE_IMAGE=localhost/debian:trixie-minbase \
    -f docker/Dockerfile.debian13 -t "$DEV_IMAGE" \
    --ignorefile docker/Dockerfile.dockerignore . >/dev/null
  t2=$(date +%s)
  # The tree as git sees it. What the copy has beyond its build trees goes
  # first, so a file removed here is gone there too; the build trees stay
  # for an incremental rerun.
  mkdir -p "$WORK/src"
  find "$WORK/src" -mindepth 1 -maxdepth 1 ! -name 'build*' -exec rm -rf {} +
  git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - | tar -C "$WORK/src" -xf -
  run_args=(-v "$WORK:/work")
  # Where CMake looks by default: ../shared beside the checkout.
  [ -d "$SHARED" ] && run_args+=(-v "$SHARED:/work/shared:ro")
  # The host's CA bundle: where the host reaches PyPI through a TLS proxy it
  # trusts (these machines do), pip in the container must trust it too.
  ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
  if [ -f "$ca" ]; then
    run_args+=(-v "$ca:/etc/ssl/host-ca.crt:ro" -e PIP_CERT=/etc/ssl/host-ca.crt
             -e SSL_CERT_FILE=/etc/ssl/host-ca.crt
             -e REQUESTS_CA_BUNDLE=/etc/ssl/host-ca.crt)
  fi
  set +e
  $ENGINE run --rm --network=host "${run_args[@]}" \
    -e BERTOLOGY_SHARED_DIR=/work/shared -e JOBS="${JOBS:-$(nproc)}" \
    -w /work/src "$DEV_IMAGE" make test
  rc=$?
  set -e
  t3=$(date +%s)
  echo "check-debian13: base image $((t1 - t0)) s, packages $((t2 - t1)) s," \
    "make test $((t3 - t2)) s: $([ $rc = 0 ] && echo passed || echo "FAILED ($rc)")"
  return $rc
}

main "$@"
