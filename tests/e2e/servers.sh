#!/usr/bin/env bash
# CTest fixtures: one PostgreSQL and one Kafka for the whole integration run,
# and a second Kafka of another version for the tests that also run on it.
#   servers.sh start DIR   writes DIR/env (KEY=VALUE lines) for the tests;
#                          Kafka of OUTBOX_KAFKA_VERSION (default 4.4,
#                          kafka_version in scripts/lib.sh)
#   servers.sh start-kafka DIR PG_DIR
#                          only a Kafka (of OUTBOX_KAFKA_VERSION) in DIR/kafka;
#                          DIR/env has the PostgreSQL of the fixture that
#                          `start PG_DIR` made and this Kafka
#                          (servers39_start: 3.9)
#   servers.sh stop DIR    stops what DIR has and removes DIR
set -euo pipefail
scripts="$(cd "$(dirname "$0")/../../scripts" && pwd)"
cmd=$1; dir=$2
case $cmd in
  start)
    [ ! -d "$dir" ] || "$0" stop "$dir"
    mkdir -p "$dir"
    "$scripts/pg.sh" start "$dir/pg" >"$dir/pg.env"
    "$scripts/kafka.sh" start "$dir/kafka" >"$dir/kafka.env"
    cat "$dir/pg.env" "$dir/kafka.env" | tr -d "'" >"$dir/env"
    cat "$dir/env" ;;
  start-kafka)
    pg_dir=${3:?usage: $0 start-kafka DIR PG_DIR}
    [ -f "$pg_dir/pg.env" ] || { echo "no PostgreSQL in $pg_dir (servers.sh start)" >&2; exit 1; }
    [ ! -d "$dir" ] || "$0" stop "$dir"
    mkdir -p "$dir"
    "$scripts/kafka.sh" start "$dir/kafka" >"$dir/kafka.env"
    cat "$pg_dir/pg.env" "$dir/kafka.env" | tr -d "'" >"$dir/env"
    cat "$dir/env" ;;
  stop)
    [ -d "$dir" ] || exit 0
    "$scripts/kafka.sh" stop "$dir/kafka" || true
    [ ! -d "$dir/pg" ] || "$scripts/pg.sh" stop "$dir/pg" || true
    rm -rf "$dir" ;;
  *) echo "usage: $0 start|start-kafka|stop DIR [PG_DIR]" >&2; exit 2 ;;
esac
