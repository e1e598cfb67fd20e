#!/usr/bin/env bash
# CTest fixture: one PostgreSQL and one Kafka for the whole integration run.
#   servers.sh start DIR   writes DIR/env (KEY=VALUE lines) for the tests
#   servers.sh stop DIR    stops both and removes DIR
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
  stop)
    [ -d "$dir" ] || exit 0
    "$scripts/kafka.sh" stop "$dir/kafka" || true
    "$scripts/pg.sh" stop "$dir/pg" || true
    rm -rf "$dir" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
