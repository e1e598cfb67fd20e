#!/usr/bin/env bash
# podman for the project's container tests, with no image registry: the
# Debian base images the Dockerfiles' FROM lines name (debian:RELEASE and
# debian:RELEASE-slim, RELEASE 12 or 13) are made here from Debian's archive
# (debootstrap --variant=minbase bookworm or trixie), cached as tarballs in
# $OUTBOX_CACHE/container, and imported under those names so `--pull=never`
# finds them.
#
#   scripts/container.sh base [RELEASE...] make/import the base images of
#                                          those releases (default: 12 13;
#                                          idempotent)
#   scripts/container.sh podman ARGS...    podman with the project's settings
#   scripts/container.sh build TAG DOCKERFILE [ARGS...]
#                                          podman build from the repository
#                                          root; first the base images
#                                          of the releases its FROM lines
#                                          name (DEBIAN_RELEASE: its
#                                          --build-arg, else the
#                                          Dockerfile's ARG default)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# runc and the rlimits this machine allows (scripts/container/containers.conf).
export CONTAINERS_CONF="$OUTBOX_ROOT/scripts/container/containers.conf"
# Debian's releases by number, as the debian:N tags name them.
RELEASES=(12 13)
declare -A CODENAMES=([12]=bookworm [13]=trixie)
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

# codename RELEASE: bookworm for 12, trixie for 13.
codename() {
  [ -n "${CODENAMES[${1:-}]:-}" ] ||
    die "unknown Debian release '${1:-}' (one of: ${RELEASES[*]})"
  echo "${CODENAMES[$1]}"
}

# base_tarball RELEASE SLIM: prints the cached root file system tarball of
# that release, making it first: debootstrap for the full one, the full one
# stripped for the slim.
base_tarball() {
  local release=$1 slim=$2 suite dir="$OUTBOX_CACHE/container" name root
  suite=$(codename "$release")
  name=debian-$release-minbase
  [ "$slim" = 1 ] && name=debian-$release-slim
  if [ ! -s "$dir/$name.tar.gz" ]; then
    mkdir -p "$dir"
    root=$(mktemp -d /tmp/outbox-rootfs.XXXXXX)
    if [ "$slim" = 1 ]; then
      tar -C "$root" -xzf "$(base_tarball "$release" 0)"
      printf '%s\n' "$SLIM_EXCLUDES" >"$root/etc/dpkg/dpkg.cfg.d/slim"
      find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
      find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
      rm -rf "$root"/usr/share/{man,groff,info,lintian}/* "$root"/var/cache/debconf/*-old
      find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias \
        -exec rm -rf {} +
    else
      command -v debootstrap >/dev/null ||
        die "debootstrap missing (scripts/setup.sh installs it)"
      log "making the Debian $release base image with debootstrap (once; cached in $dir)"
      debootstrap --variant=minbase "$suite" "$root" "$MIRROR" >"$root.log" 2>&1 ||
        { tail -5 "$root.log" >&2; rm -rf "$root" "$root.log"; die "debootstrap failed"; }
      rm -f "$root.log"
      # Point releases and security updates, as the host gets them.
      cat >"$root/etc/apt/sources.list" <<SOURCES
deb $MIRROR $suite main
deb $MIRROR $suite-updates main
deb $SECURITY_MIRROR $suite-security main
SOURCES
      rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    fi
    tar -C "$root" -czf "$dir/$name.tar.gz.tmp" . && mv "$dir/$name.tar.gz.tmp" "$dir/$name.tar.gz"
    rm -rf "$root"
  fi
  echo "$dir/$name.tar.gz"
}

# base [RELEASE...]: debian:N is the debootstrap'd minbase system of
# release N, debian:N-slim the same without documentation (as Debian's own
# images name and make them).
base() {
  local release slim tag
  [ $# -gt 0 ] || set -- "${RELEASES[@]}"
  for release in "$@"; do
    codename "$release" >/dev/null
    for slim in 0 1; do
      tag=docker.io/library/debian:$release
      [ $slim = 0 ] || tag+=-slim
      podman image exists "$tag" && continue
      log "importing the base image $tag"
      podman import --quiet "$(base_tarball "$release" $slim)" "$tag" >/dev/null
    done
  done
}

# build_releases DOCKERFILE ARGS...: the Debian releases a build's FROM
# lines name: literal ones (debian:12-slim) and the DEBIAN_RELEASE one, from
# its --build-arg or else the Dockerfile's ARG default.
build_releases() {
  local dockerfile=$1 release prev= arg; shift
  release=$(sed -n 's/^ARG DEBIAN_RELEASE=\([0-9]*\)$/\1/p' "$dockerfile")
  for arg in "$@"; do
    case $prev/$arg in
      --build-arg/DEBIAN_RELEASE=* | */--build-arg=DEBIAN_RELEASE=*)
        release=${arg##*DEBIAN_RELEASE=} ;;
    esac
    prev=$arg
  done
  { [ -z "$release" ] || echo "$release"
    sed -n 's/^FROM debian:\([0-9][0-9]*\).*/\1/p' "$dockerfile"; } | sort -u
}

build() {
  local tag=$1 dockerfile=$2; shift 2
  # shellcheck disable=SC2046  # one word per release
  base $(build_releases "$OUTBOX_ROOT/$dockerfile" "$@")
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
  base) base "$@" ;;
  podman) podman "$@" ;;
  build) build "$@" ;;
  *) die "usage: $0 base [RELEASE...] | podman ARGS... | build TAG DOCKERFILE [ARGS...]" ;;
esac
