#!/usr/bin/env bash
# CTest: bench/debezium_compare.sh on the fixture's PostgreSQL and Kafka
# (Debezium 3.2 + Outbox Event Router against outbox-relay in compatibility
# mode, record by record; about 2 minutes). Usage: debezium_compare_test.sh
# BUILD_DIR. The env file is $OUTBOX_TEST_ENV.
set -euo pipefail
env_file=${OUTBOX_TEST_ENV:?}
get() { sed -n "s/^$1=//p" "$env_file"; }
export PGHOST PGPORT PGUSER PGDATABASE OUTBOX_KAFKA_BROKERS
PGHOST=$(get PGHOST) PGPORT=$(get PGPORT) PGUSER=$(get PGUSER)
PGDATABASE=$(get PGDATABASE) OUTBOX_KAFKA_BROKERS=$(get OUTBOX_KAFKA_BROKERS)
export OUTBOX_BUILD_DIR=$1
dir=$(mktemp -d /tmp/debezium_compare_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$(dirname "$0")/../../bench/debezium_compare.sh" "$dir"
