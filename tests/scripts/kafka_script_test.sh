#!/usr/bin/env bash
# scripts/kafka.sh without the broker's jars (OUTBOX_CACHE pointing at a
# cache with no kafka/<version>/libs, or an empty one), for each pinned
# version (OUTBOX_KAFKA_VERSION): `start` and `restart` fail at once with
# one line naming that version's directory and the script that fetches the
# jars, before any java runs (no ClassNotFoundException, nothing created).
# A version that is not pinned fails the same way, naming the pinned ones.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for v in 3.9 4.4; do
  mkdir -p "$tmp/empty/kafka/$v/libs" "$tmp/none"
  for cache in "$tmp/none" "$tmp/empty"; do
    for cmd in start restart; do
      dir="$tmp/broker-$cmd"
      [ $cmd = start ] || mkdir -p "$dir"
      out=$(OUTBOX_KAFKA_VERSION=$v OUTBOX_CACHE=$cache "$root/scripts/kafka.sh" $cmd "$dir" 2>&1)
      code=$?
      want="error: no Kafka jars in $cache/kafka/$v/libs (OUTBOX_CACHE=$cache): scripts/setup.sh fetches them"
      [ $code = 1 ] || fail "$v: $cmd with $cache: exit $code, want 1"
      [ "$out" = "$want" ] || fail "$v: $cmd with $cache printed:
$out
want:
$want"
      [ $cmd != start ] || [ ! -e "$dir" ] || fail "$v: start with $cache created $dir"
      rm -rf "$dir"
    done
  done
done
out=$(OUTBOX_KAFKA_VERSION=2.8 "$root/scripts/kafka.sh" start "$tmp/b" 2>&1)
code=$?
want="error: Kafka version '2.8' is not pinned (OUTBOX_KAFKA_VERSION: 3.9 4.4)"
[ $code = 1 ] && [ "$out" = "$want" ] || fail "OUTBOX_KAFKA_VERSION=2.8: exit $code, printed:
$out
want:
$want"
[ ! -e "$tmp/b" ] || fail "OUTBOX_KAFKA_VERSION=2.8 created $tmp/b"
[ $fails = 0 ] && echo "kafka.sh refuses to start without its jars or with an unpinned version: ok"
exit $((fails > 0))
