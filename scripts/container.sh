#!/usr/bin/env bash
# podman for the project's container tests, with no image registry: the
# Debian 12 base image the Dockerfiles' FROM lines name is made here from
# Debian's archive (debootstrap --variant=minbase bookworm), cached as a
# tarball in $OUTBOX_CACHE/container, and imported under those names so
# `--pull=never` finds it.
#
#   scripts/container.sh base            make/import the base image (idempotent)
#   scripts/container.sh podman ARGS...  podman with the project's settings
#   scripts/container.sh build TAG DOCKERFILE [ARGS...]
#                                        podman build from the repository root
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# runc and the rlimits this machine allows (scripts/container/containers.conf).
export CONTAINERS_CONF="$OUTBOX_ROOT/scripts/container/containers.conf"
BASE_TAGS=(docker.io/library/debian:12 docker.io/library/debian:12-slim)
SUITES="bookworm bookworm-updates"
MIRROR=${OUTBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${OUTBOX_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

base() {
  local tag missing=0
  for tag in "${BASE_TAGS[@]}"; do
    podman image exists "$tag" || missing=1
  done
  [ $missing = 1 ] || return 0
  local tarball="$OUTBOX_CACHE/container/debian-12-minbase.tar.gz"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || die "debootstrap missing (scripts/setup.sh installs it)"
    log "making the Debian 12 base image with debootstrap (once; cached in $tarball)"
    local root
    root=$(mktemp -d /tmp/outbox-rootfs.XXXXXX)
    debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 ||
      { tail -5 "$root.log" >&2; rm -rf "$root" "$root.log"; die "debootstrap failed"; }
    # Point releases and security updates, as the host gets them.
    cat >"$root/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
SOURCES
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    mkdir -p "$(dirname "$tarball")"
    tar -C "$root" -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$root" "$root.log"
  fi
  log "importing the base image as ${BASE_TAGS[*]}"
  podman import "$tarball" "${BASE_TAGS[0]}" >/dev/null
  for tag in "${BASE_TAGS[@]:1}"; do podman tag "${BASE_TAGS[0]}" "$tag"; done
}

build() {
  local tag=$1 dockerfile=$2; shift 2
  base
  # <Dockerfile>.dockerignore keeps build trees and caches out of the context.
  local ignore=()
  [ -f "$OUTBOX_ROOT/$dockerfile.dockerignore" ] &&
    ignore=(--ignorefile "$OUTBOX_ROOT/$dockerfile.dockerignore")
  podman build --pull=never --layers "${ignore[@]}" -f "$OUTBOX_ROOT/$dockerfile" \
    -t "$tag" "$@" "$OUTBOX_ROOT"
}

cmd=${1:-}; shift || true
case $cmd in
  base) base ;;
  podman) podman "$@" ;;
  build) build "$@" ;;
  *) die "usage: $0 base | podman ARGS... | build TAG DOCKERFILE [ARGS...]" ;;
esac
