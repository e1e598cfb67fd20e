#!/usr/bin/env bash
# CTest fixture: one 3-node Kafka cluster (scripts/kafka_cluster.sh) of a
# Kafka version for every cluster case of the run (kafka_cluster_4,
# kafka_cluster_39 in tests/CMakeLists.txt).
#   cluster.sh start DIR VERSION   VERSION as OUTBOX_KAFKA_VERSION takes it
#                                  (4.4, 3.9); writes DIR/env (the
#                                  OUTBOX_KAFKA_CLUSTER_* lines) for the
#                                  tests ($OUTBOX_CLUSTER_ENV)
#   cluster.sh stop DIR            stops it and removes DIR
set -euo pipefail
scripts="$(cd "$(dirname "$0")/../../scripts" && pwd)"
cmd=${1:-}; dir=${2:-}
case $cmd in
  start)
    version=${3:?usage: $0 start DIR VERSION}
    [ ! -d "$dir" ] || "$0" stop "$dir"
    mkdir -p "$dir"
    OUTBOX_KAFKA_VERSION=$version "$scripts/kafka_cluster.sh" start "$dir/kafka" >"$dir/env"
    cat "$dir/env" ;;
  stop)
    [ -d "$dir" ] || exit 0
    "$scripts/kafka_cluster.sh" stop "$dir/kafka" || true
    rm -rf "$dir" ;;
  *) echo "usage: $0 start DIR VERSION | stop DIR" >&2; exit 2 ;;
esac
