#!/usr/bin/env bash
# The whole project, tests included, built in a Debian 13 container with its
# GCC 14 and the project's warning flags as errors (OUTBOX_WERROR), then its
# unit tests run there (issue 33). Not in the test command: a fresh build of
# the tests costs about half an hour of this 2-core machine; the container
# test's image build compiles src/ with GCC 14 and warnings as errors on
# every run. Laid out as docker/Dockerfile's build stage (/src, /build,
# buildah's ccache cache mount) so src/'s objects are ccache hits both ways.
#
#   scripts/debian13_build.sh [BUILD_DIR]   (default /tmp/outbox-debian13-build)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
build=${1:-/tmp/outbox-debian13-build}
tag=localhost/outbox-relay:debian13-dev
ccache=/var/tmp/buildah-cache/root/.cache/ccache
mkdir -p "$build" "$ccache"
"$OUTBOX_ROOT/scripts/container.sh" base 13
context=$(mktemp -d /tmp/outbox-debian13-dev.XXXXXX)
trap 'rm -rf "$context"' EXIT
dockerfile=$context/Dockerfile
# The build packages of scripts/lib.sh and the tests' of scripts/setup.sh.
cat >"$dockerfile" <<DOCKERFILE
FROM debian:13
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  ${OUTBOX_BUILD_PACKAGES[*]} ccache libgtest-dev libgmock-dev libbenchmark-dev \
  python3 python3-yaml && rm -rf /var/lib/apt/lists/*
DOCKERFILE
"$OUTBOX_ROOT/scripts/container.sh" podman build --pull=never --layers -q -t "$tag" \
  -f "$dockerfile" "$context" >/dev/null
"$OUTBOX_ROOT/scripts/container.sh" podman run --rm --pull=never --network host \
  -v "$OUTBOX_ROOT:/src:ro" -v "$build:/build" -v "$ccache:/root/.cache/ccache" "$tag" sh -c '
  g++ --version | head -1
  cd /src && cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_TESTING=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DOUTBOX_WERROR=ON >/dev/null &&
  cmake --build /build -j"$(nproc)" && cd /build && ctest -L unit'
