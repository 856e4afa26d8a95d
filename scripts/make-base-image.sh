#!/usr/bin/env bash
# Makes the Debian 12 base image for podman builds on machines that reach
# Debian's archive but no container registry: debootstrap's minbase variant
# (about a minute), imported as $BASE_IMAGE. Skips the work when the image
# exists (FORCE=1 remakes it).
#
#   scripts/make-base-image.sh            # -> localhost/debian:bookworm-minbase
#   MIRROR=http://deb.debian.org/debian   # the archive debootstrap reads
#   SUITE=trixie BASE_IMAGE=localhost/debian:trixie-minbase \
#     scripts/make-base-image.sh          # Debian 13 (make check-debian13)
set -euo pipefail
source "$(dirname "$0")/container-engine.sh"
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=${SUITE:-bookworm}

if [ "$ENGINE" != podman ]; then
  echo "make-base-image: $ENGINE builds on $BASE_IMAGE from its registry"
  exit 0
fi
if [ "${FORCE:-0}" != 1 ] && $ENGINE image exists "$BASE_IMAGE" 2>/dev/null; then
  echo "make-base-image: $BASE_IMAGE exists"
  exit 0
fi
command -v debootstrap >/dev/null || "$ROOT/scripts/install-deps.sh" --image
root=$(mktemp -d /var/tmp/bertology-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "make-base-image: debootstrap $SUITE from $MIRROR"
if ! debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" \
    >"$root.log" 2>&1; then
  tail -20 "$root.log" >&2
  echo "make-base-image: debootstrap failed (log: $root.log)" >&2
  exit 1
fi
rm -f "$root.log"
# What debian:*-slim does too: no apt caches in the image.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
tar -C "$root" -c . | $ENGINE import \
  --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
echo "make-base-image: made $BASE_IMAGE"
