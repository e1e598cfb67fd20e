#!/usr/bin/env bash
# The tableless outbox against the table outbox: WAL bytes per event and the
# relay's backlog drain rate, with each output plugin.
#
#   bench/message_outbox.sh [--events N] [--per-txn K] [--runs R]
#                           [--plugins wal2json,pgoutput]
#                                   (defaults 200000 10 1 wal2json,pgoutput)
#
# Three ways to write the same N events (drain.sh's ~350-byte jsonb
# payload, K per transaction), one backlog each, one after the other:
#   table     INSERT INTO outbox (the table outbox; a janitor deletes later)
#   nojanitor INSERT and DELETE in the same transaction (sql/examples.sql 2)
#   message   SELECT outbox_emit(...) (sql/outbox_emit.sql): no table
# WAL bytes per event is pg_current_wal_lsn() before and after each backlog
# over N. Slots (R per plugin and way) are made just before their backlog,
# so each decodes its own from its start; for each, outbox-relay (with
# outbox.messages.enabled for the message backlog) drains it and the clock
# stops when the slot's confirmed_flush_lsn reaches the backlog's end (every
# event acknowledged by Kafka). Prints a line per drain and a markdown table
# of medians. Durable PostgreSQL defaults.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

events=200000; per_txn=10; runs=1; plugins=wal2json,pgoutput
while [ $# -gt 0 ]; do
  case $1 in
    --events) events=$2; shift 2 ;;
    --per-txn) per_txn=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --plugins) plugins=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
IFS=, read -ra plugins <<<"$plugins"
ways=(table nojanitor message)

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
CMAKE_BUILD_TYPE=Release "$OUTBOX_ROOT/scripts/setup.sh" "$BUILD_DIR" >/dev/null
RELAY="$BUILD_DIR/bin/outbox-relay"
bench_servers outbox-msgbench
bench_max_slots $((${#ways[@]} * runs * ${#plugins[@]}))
psql -q -f "$OUTBOX_ROOT/sql/outbox.sql"
psql -q -f "$OUTBOX_ROOT/sql/outbox_emit.sql"
psql -q -c "CREATE PUBLICATION outbox_relay FOR TABLE public.outbox WITH (publish = 'insert')"
echo warm | kcat -P -b "$OUTBOX_KAFKA_BROKERS" -t outbox.event.order

payload="jsonb_build_object('order_id', i, 'customer', 'customer-' || (i % 977),
  'lines', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (i % 50), 'qty', 1 + i % 5)),
  'note', repeat('x', 260))"
declare -A write end_lsn wal
write[table]="INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
  SELECT gen_random_uuid(), 'order', (i % 10000)::text, 'OrderCreated', $payload
  FROM generate_series(t * $per_txn + 1, t * $per_txn + $per_txn) AS i;"
write[nojanitor]="WITH e AS (
    INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
    SELECT gen_random_uuid(), 'order', (i % 10000)::text, 'OrderCreated', $payload
    FROM generate_series(t * $per_txn + 1, t * $per_txn + $per_txn) AS i
    RETURNING id)
  SELECT array_agg(id) INTO ids FROM e;
  DELETE FROM outbox WHERE id = ANY (ids);"
write[message]="PERFORM outbox_emit('order', (i % 10000)::text, 'OrderCreated', $payload)
  FROM generate_series(t * $per_txn + 1, t * $per_txn + $per_txn) AS i;"
for w in "${ways[@]}"; do
  for p in "${plugins[@]}"; do
    for r in $(seq "$runs"); do
      psql -qAt -c "SELECT pg_create_logical_replication_slot('${w}_${p}_$r', '$p')" >/dev/null
    done
  done
  psql -q -c CHECKPOINT
  start=$(psql -qAt -c "SELECT pg_current_wal_lsn()")
  t0=$(date +%s.%N)
  psql -q -v ON_ERROR_STOP=1 <<SQL
DO \$\$
DECLARE ids uuid[];
BEGIN
  FOR t IN 0..($events / $per_txn - 1) LOOP
    ${write[$w]}
    COMMIT;
  END LOOP;
END
\$\$;
SQL
  end_lsn[$w]=$(psql -qAt -c "SELECT pg_current_wal_lsn()")
  wal[$w]=$(psql -qAt -c "SELECT pg_wal_lsn_diff('${end_lsn[$w]}', '$start')")
  log "$w: wrote $events events in $(echo "$(date +%s.%N) - $t0" | bc) s, $((wal[$w] / events)) WAL bytes/event (checkpoint first: full-page images included)"
done

results=()
for r in $(seq "$runs"); do
 for w in "${ways[@]}"; do
  for p in "${plugins[@]}"; do
   slot="${w}_${p}_$r"
   s=$(date +%s.%N)
   "$RELAY" --pg "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" \
     --kafka "$OUTBOX_KAFKA_BROKERS" --slot "$slot" --set postgres.create_slot=false \
     --set postgres.plugin="$p" --set log.progress_interval_s=0 --set http.listen= \
     --set outbox.messages.enabled=$([ $w = message ] && echo true || echo false) \
     --set postgres.state_dir="$work/state" 2>"$work/$slot.log" &
   pid=$!
   until [ "$(psql -qAt -c "SELECT confirmed_flush_lsn >= '${end_lsn[$w]}' FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ]; do
     kill -0 $pid 2>/dev/null || die "relay exited: $(tail -3 "$work/$slot.log")"
     sleep 0.05
   done
   secs=$(echo "$(date +%s.%N) - $s" | bc)
   read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
   kill -TERM $pid; wait $pid || true
   cpu=$(echo "scale=3; ($ut + $st) / $(getconf CLK_TCK)" | bc)
   delivered=$(grep -o 'delivered=[0-9]*' "$work/$slot.log" | tail -1 | cut -d= -f2)
   printf 'run %d, %s, %s: %.2f s (%.0f ev/s), relay cpu %.2f us/event, delivered %s\n' \
     "$r" "$w" "$p" "$secs" "$(echo "$events / $secs" | bc -l)" \
     "$(echo "$cpu * 1000000 / $events" | bc -l)" "$delivered"
   results+=("$w $p $secs $cpu")
  done
 done
done
printf '%s\n' "${results[@]}" | bench_summary outbox-kinds "$events" \
  "table=${wal[table]}" "nojanitor=${wal[nojanitor]}" "message=${wal[message]}"
