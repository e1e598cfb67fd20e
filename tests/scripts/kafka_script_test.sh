#!/usr/bin/env bash
# scripts/kafka.sh without the broker's jars (OUTBOX_CACHE pointing at a
# cache with no kafka/libs, or an empty one): `start` and `restart` fail at
# once with one line naming the directory and the script that fetches the
# jars, before any java runs (no ClassNotFoundException, nothing created).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir -p "$tmp/empty/kafka/libs" "$tmp/none"
for cache in "$tmp/none" "$tmp/empty"; do
  for cmd in start restart; do
    dir="$tmp/broker-$cmd"
    [ $cmd = start ] || mkdir -p "$dir"
    out=$(OUTBOX_CACHE=$cache "$root/scripts/kafka.sh" $cmd "$dir" 2>&1)
    code=$?
    want="error: no Kafka jars in $cache/kafka/libs (OUTBOX_CACHE=$cache): scripts/setup.sh fetches them"
    [ $code = 1 ] || fail "$cmd with $cache: exit $code, want 1"
    [ "$out" = "$want" ] || fail "$cmd with $cache printed:
$out
want:
$want"
    [ $cmd != start ] || [ ! -e "$dir" ] || fail "start with $cache created $dir"
    rm -rf "$dir"
  done
done
[ $fails = 0 ] && echo "kafka.sh refuses to start without its jars: ok"
exit $((fails > 0))
