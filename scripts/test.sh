#!/usr/bin/env bash
# The whole test suite from nothing: installs packages, fetches Kafka, builds,
# and runs every CTest test (unit and integration; integration tests start
# their own PostgreSQL and Kafka on free loopback ports).
#
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -L unit
set -euo pipefail
source "$(dirname "$0")/lib.sh"

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
"$OUTBOX_ROOT/scripts/setup.sh" "$BUILD_DIR"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 900 "$@"
