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
SUITES="bookworm bookworm-updates"
MIRROR=${OUTBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${OUTBOX_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# The dpkg excludes of Debian's slim images: no documentation but the
# copyright files, no man pages, no translations.
SLIM_EXCLUDES='path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias'

# base_tarball SLIM: prints the cached root file system tarball, making it
# first: debootstrap for the full one, the full one stripped for the slim.
base_tarball() {
  local dir="$OUTBOX_CACHE/container" name=debian-12-minbase root
  [ "$1" = 1 ] && name=debian-12-slim
  if [ ! -s "$dir/$name.tar.gz" ]; then
    mkdir -p "$dir"
    root=$(mktemp -d /tmp/outbox-rootfs.XXXXXX)
    if [ "$1" = 1 ]; then
      tar -C "$root" -xzf "$(base_tarball 0)"
      printf '%s\n' "$SLIM_EXCLUDES" >"$root/etc/dpkg/dpkg.cfg.d/slim"
      find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
      find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
      rm -rf "$root"/usr/share/{man,groff,info,lintian}/* "$root"/var/cache/debconf/*-old
      find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
        -exec rm -rf {} +
    else
      command -v debootstrap >/dev/null ||
        die "debootstrap missing (scripts/setup.sh installs it)"
      log "making the Debian 12 base image with debootstrap (once; cached in $dir)"
      debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 ||
        { tail -5 "$root.log" >&2; rm -rf "$root" "$root.log"; die "debootstrap failed"; }
      rm -f "$root.log"
      # Point releases and security updates, as the host gets them.
      cat >"$root/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
SOURCES
      rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    fi
    tar -C "$root" -czf "$dir/$name.tar.gz.tmp" . && mv "$dir/$name.tar.gz.tmp" "$dir/$name.tar.gz"
    rm -rf "$root"
  fi
  echo "$dir/$name.tar.gz"
}

# debian:12 is the debootstrap'd minbase system, debian:12-slim the same
# without documentation (as Debian's own images).
base() {
  local slim tag
  for slim in 0 1; do
    tag=docker.io/library/debian:12
    [ $slim = 0 ] || tag+=-slim
    podman image exists "$tag" && continue
    log "importing the base image $tag"
    podman import --quiet "$(base_tarball $slim)" "$tag" >/dev/null
  done
}

build() {
  local tag=$1 dockerfile=$2; shift 2
  base
  # <Dockerfile>.dockerignore keeps build trees and caches out of the context.
  local ignore=()
  [ -f "$OUTBOX_ROOT/$dockerfile.dockerignore" ] &&
    ignore=(--ignorefile "$OUTBOX_ROOT/$dockerfile.dockerignore")
  # --format docker: OCI images cannot carry a HEALTHCHECK.
  podman build --pull=never --layers --format docker "${ignore[@]}" -f "$OUTBOX_ROOT/$dockerfile" \
    -t "$tag" "$@" "$OUTBOX_ROOT"
}

cmd=${1:-}; shift || true
case $cmd in
  base) base ;;
  podman) podman "$@" ;;
  build) build "$@" ;;
  *) die "usage: $0 base | podman ARGS... | build TAG DOCKERFILE [ARGS...]" ;;
esac
