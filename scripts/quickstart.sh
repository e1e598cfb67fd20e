#!/usr/bin/env bash
# The relay end to end on this machine, from nothing:
#   installs only what it runs (the three binaries' build and runtime
#   packages, PostgreSQL 15, a Java runtime and the Kafka broker's jars),
#   builds the binaries only (no tests), starts a throwaway PostgreSQL 15
#   and Kafka on free loopback ports, creates the outbox table, starts
#   outbox-relay, writes sample orders through the transactional outbox and
#   shows them arriving in Kafka. Ctrl-C stops everything and cleans up.
#
#   scripts/quickstart.sh [--events N] [--keep]
#     --events N   write N orders (default 1000), then stop (exit 1 if any
#                  did not arrive); 0 writes one order a second until Ctrl-C
#     --keep       leave the servers and relay running at the end
set -euo pipefail
source "$(dirname "$0")/lib.sh"

events=1000; keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --events) events=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
apt_install "${OUTBOX_BUILD_PACKAGES[@]}" "${OUTBOX_SERVER_PACKAGES[@]}" $(java_package)
kafka_fetch
# A new build directory builds no tests; an existing one (scripts/setup.sh's)
# keeps its settings. Either way only the three binaries are built.
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  log "building the binaries in $BUILD_DIR"
  cmake -S "$OUTBOX_ROOT" -B "$BUILD_DIR" -G Ninja -DBUILD_TESTING=OFF \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target outbox-relay outbox-poller outbox-audit
RELAY="$BUILD_DIR/bin/outbox-relay"

work=$(mktemp -d /tmp/outbox-quickstart.XXXXXX); chmod 755 "$work"
relay_pid=""
cleanup() {
  [ $keep = 1 ] && { log "left running; data in $work"; return; }
  [ -n "$relay_pid" ] && kill -TERM "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null || true
  "$OUTBOX_ROOT/scripts/kafka.sh" stop "$work/kafka" >/dev/null 2>&1 || true
  "$OUTBOX_ROOT/scripts/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo; log "stopping"; exit 130' INT TERM

eval "$("$OUTBOX_ROOT/scripts/pg.sh" start "$work/pg")"
eval "$("$OUTBOX_ROOT/scripts/kafka.sh" start "$work/kafka")"
export PGHOST PGPORT PGUSER PGDATABASE
psql -q -v ON_ERROR_STOP=1 -f "$OUTBOX_ROOT/sql/outbox.sql" -f "$OUTBOX_ROOT/sql/roles.sql"
psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY, customer text, total numeric)"

# The relay runs as the least-privilege role from sql/roles.sql. Its slot
# marker lives with this throwaway server, not in ~/.local/state.
"$RELAY" --pg "host=127.0.0.1 port=$PGPORT user=outbox_relay dbname=postgres" \
  --kafka "$OUTBOX_KAFKA_BROKERS" --set log.progress_interval_s=5 \
  --set http.listen=127.0.0.1:0 --set "postgres.state_dir=$work/state" \
  2>"$work/relay.log" &
relay_pid=$!
wait_for 30 bash -c "psql -Atc \"SELECT active FROM pg_replication_slots WHERE slot_name='outbox_relay'\" | grep -q t" ||
  die "relay did not start: $(tail -5 "$work/relay.log")"
http=$(grep -o 'http_listen=[0-9.:]*' "$work/relay.log" | head -1 | cut -d= -f2)
log "outbox-relay is streaming (log: $work/relay.log, metrics: http://$http/metrics)"
sed 's/^/  relay| /' "$work/relay.log"

# events/s and lag from the relay's own metrics endpoint
metric() {
  { curl -s "http://127.0.0.1:${http##*:}/metrics" 2>/dev/null || true; } |
    awk -v m="$1" '$1 ~ "^"m"({|$)" { s += $2 } END { printf "%d", s }'
}

# One business row and its outbox event per transaction: the pattern.
write_order() {
  local n=$1
  cat <<SQL
BEGIN;
INSERT INTO orders VALUES ($n, 'customer-$((n % 10))', $((n * 7 % 1000)).50);
INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
VALUES (gen_random_uuid(), 'order', '$n', 'OrderCreated',
        jsonb_build_object('order_id', $n, 'customer', 'customer-$((n % 10))', 'total', $((n * 7 % 1000)).50));
COMMIT;
SQL
}

count_topic() {
  { kcat -b "$OUTBOX_KAFKA_BROKERS" -C -t outbox.event.order -e -q -f '%o\n' 2>/dev/null || true; } | wc -l
}

start=$SECONDS
if [ "$events" = 0 ]; then
  log "writing one order a second; Ctrl-C to stop"
  n=0
  while :; do
    n=$((n + 1)); write_order $n | psql -q
    printf '\r  orders written: %d  events in Kafka: %d ' "$n" "$(count_topic)"
    sleep 1
  done
fi

log "writing $events orders, one transaction each"
for ((n = 1; n <= events; n++)); do write_order $n; done | psql -q -v ON_ERROR_STOP=1
log "committed $events orders in $((SECONDS - start)) s; waiting for Kafka"
deadline=$((SECONDS + 120)); got=0
prev=0
while [ $SECONDS -lt $deadline ]; do
  got=$(count_topic)
  delivered=$(metric outbox_relay_events_delivered_total)
  printf '\r  events in Kafka: %d / %d   relay: %d events/s, lag %s bytes ' \
    "$got" "$events" "$((delivered - prev))" "$(metric outbox_relay_lag_bytes)"
  prev=$delivered
  [ "$got" -ge "$events" ] && break
  sleep 1
done
echo
echo "sample record (key | headers | value):"
kcat -b "$OUTBOX_KAFKA_BROKERS" -C -t outbox.event.order -c 1 -e -q -f '  %k | %h | %s\n'
psql -Atc "SELECT '  slot ' || slot_name || ' confirmed_flush_lsn=' || confirmed_flush_lsn || ' retained=' || pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)) FROM pg_replication_slots"
if [ "$got" -lt "$events" ]; then
  tail -20 "$work/relay.log" >&2
  die "only $got of $events events reached Kafka"
fi
log "all $events events delivered in $((SECONDS - start)) s"
kill -TERM "$relay_pid"; wait "$relay_pid" && log "relay stopped cleanly (exit 0)"
relay_pid=""
