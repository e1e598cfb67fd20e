#!/usr/bin/env bash
# CTest: a bench/ script that checks itself (exit 0 = pass) on the
# fixture's PostgreSQL and Kafka: debezium_compare.sh (Debezium 3.2.3 and
# 3.7.0 + Outbox Event Router against outbox-relay in compatibility mode,
# record by record)
# and debezium_migrate.sh (a running Debezium deployment moved to the relay
# on its own slot). Usage: bench_script_test.sh BUILD_DIR SCRIPT. The env
# file is $OUTBOX_TEST_ENV.
set -euo pipefail
env_file=${OUTBOX_TEST_ENV:?}
get() { sed -n "s/^$1=//p" "$env_file"; }
export PGHOST PGPORT PGUSER PGDATABASE OUTBOX_KAFKA_BROKERS
PGHOST=$(get PGHOST) PGPORT=$(get PGPORT) PGUSER=$(get PGUSER)
PGDATABASE=$(get PGDATABASE) OUTBOX_KAFKA_BROKERS=$(get OUTBOX_KAFKA_BROKERS)
export OUTBOX_BUILD_DIR=$1
script=$2
case $script in
  debezium_compare.sh)
    dir=$(mktemp -d /tmp/debezium_compare_test.XXXXXX)
    trap 'rm -rf "$dir"' EXIT
    "$(dirname "$0")/../../bench/$script" "$dir" ;;
  takeover.sh) "$(dirname "$0")/../../bench/$script" --kills 3 ;;
  *) "$(dirname "$0")/../../bench/$script" ;;
esac
