#!/usr/bin/env bash
# Regenerates every page generated from the code: docs/reference/
# {configuration,metrics,exit-codes,outbox-relay,outbox-poller,outbox-audit}.md,
# docs/man/*.1 and docs/operations/kafka-acls.md, with the project's own
# outbox-docgen (src/docgen/). Run it after adding a configuration key, a
# metric, an exit code, a flag or a Kafka resource (config/kafka_acls.cc);
# docs_generated_test fails until you do.
#
#   scripts/gen_docs.sh [BUILD_DIR]     (default: build, configured by setup.sh)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

BUILD_DIR=${1:-${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}}
[ -f "$BUILD_DIR/CMakeCache.txt" ] || "$OUTBOX_ROOT/scripts/setup.sh" --no-build
[ -f "$BUILD_DIR/CMakeCache.txt" ] ||
  cmake -S "$OUTBOX_ROOT" -B "$BUILD_DIR" -G Ninja >/dev/null
cmake --build "$BUILD_DIR" --target outbox-docgen >/dev/null
"$BUILD_DIR/bin/outbox-docgen" "$OUTBOX_ROOT/docs"
log "regenerated docs/reference, docs/man and docs/operations/kafka-acls.md"
