# Sourced by the image scripts (make image, make image-test): picks the
# container engine and the base image, installing podman where neither
# engine is usable.
#
#   ENGINE      docker where a Docker daemon answers, else podman (installed
#               by install-deps.sh --image when missing); set to force one.
#   BASE_IMAGE  the Debian 12 image docker/Dockerfile builds on: with docker,
#               the public debian:12.8-slim; with podman, one imported from
#               Debian's archive (scripts/make-base-image.sh), since no
#               registry may be reachable.
#   IMAGE       the tag built and tested: bertology-server:<server version>.
# shellcheck shell=bash

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
VERSION=$(sed -n 's/.*kBertologyVersion\[\] = "\([^"]*\)".*/\1/p' \
  "$ROOT/server/service/registry/version.h")
IMAGE=${IMAGE:-localhost/bertology-server:$VERSION}

if [ -z "${ENGINE:-}" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    ENGINE=docker
  else
    ENGINE=podman
  fi
fi
if [ "$ENGINE" = podman ]; then
  command -v podman >/dev/null || "$ROOT/scripts/install-deps.sh" --image
  export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/docker/podman-containers.conf}
  BASE_IMAGE=${BASE_IMAGE:-localhost/debian:bookworm-minbase}
else
  BASE_IMAGE=${BASE_IMAGE:-debian:12.8-slim}
fi
export ENGINE BASE_IMAGE IMAGE VERSION
