#!/usr/bin/env bash
# `make image-test`: tests/image/image_test.py against the image `make image`
# built, with the engine and tag scripts/container-engine.sh picks. Prints
# the time it took.
set -euo pipefail
source "$(dirname "$0")/container-engine.sh"
if ! $ENGINE image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "image-test: no image $IMAGE: run make image first" >&2
  exit 1
fi
start=$(date +%s)
/usr/bin/python3 "$ROOT/tests/image/image_test.py" "$@"
echo "image-test: passed in $(( $(date +%s) - start )) s ($ENGINE, $IMAGE)"
