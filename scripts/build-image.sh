#!/usr/bin/env bash
# `make image`: builds docker/Dockerfile into $IMAGE with podman (docker
# where a daemon answers; scripts/container-engine.sh), after making the
# base image where podman needs one. The context is the repository root,
# filtered by docker/Dockerfile.dockerignore. Build stages reach Debian's
# archive through the host's network.
set -euo pipefail
source "$(dirname "$0")/container-engine.sh"
cd "$ROOT"

args=(build -f docker/Dockerfile --build-arg "BASE_IMAGE=$BASE_IMAGE"
      -t "$IMAGE" --network=host)
if [ "$ENGINE" = podman ]; then
  scripts/make-base-image.sh
  # Docker's image format: OCI images have no HEALTHCHECK, and podman drops
  # the Dockerfile's without it.
  args+=(--format docker --ignorefile docker/Dockerfile.dockerignore)
fi
echo "build-image: $ENGINE ${args[*]} ."
start=$(date +%s)
$ENGINE "${args[@]}" .
echo "build-image: built $IMAGE on $BASE_IMAGE in $(( $(date +%s) - start )) s"
