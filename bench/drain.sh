#!/usr/bin/env bash
# Backlog drain: outbox-relay against pg_recvlogical (the walsender's own
# ceiling) on the same WAL, side by side in one run.
#
#   bench/drain.sh [--events N] [--per-txn K] [--runs R] [--stages]
#                                                (defaults 1000000 10 3)
#
# Writes N outbox events (~350-byte jsonb payloads, K per transaction) while
# nothing reads them, into a WAL that 2R slots were created before: R for the
# relay, R for pg_recvlogical. Then drains each slot in turn, alternating the
# two systems, and prints per-run times, medians and the ratio. For the relay
# the clock stops when the slot's confirmed_flush_lsn reaches the end of the
# backlog, i.e. when Kafka acknowledged every event. Also samples the relay's
# peak RSS (VmHWM) and CPU time from /proc. Durable PostgreSQL defaults.
#
# --stages also measures, in each run, what each stage of the relay costs
# alone (bench/stage_cost.cc): receiving the same WAL through the relay's
# libpq stream, plus decoding, plus routing (from a slot that is never
# confirmed, so every run reads the same backlog), and producing as many
# records of the same shape through the relay's Kafka sink, with and
# without the "id" header. Prints a markdown table of medians: what bounds
# the relay's CPU per event.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

events=1000000; per_txn=10; runs=3; stages=0
while [ $# -gt 0 ]; do
  case $1 in
    --events) events=$2; shift 2 ;;
    --per-txn) per_txn=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --stages) stages=1; shift ;;
    *) die "unknown argument $1" ;;
  esac
done

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
CMAKE_BUILD_TYPE=Release "$OUTBOX_ROOT/scripts/setup.sh" "$BUILD_DIR" >/dev/null
[ $stages = 0 ] || cmake --build "$BUILD_DIR" --target stage_cost >/dev/null
RELAY="$BUILD_DIR/bin/outbox-relay"
work=$(mktemp -d /tmp/outbox-bench.XXXXXX); chmod 755 "$work"
cleanup() {
  "$OUTBOX_ROOT/scripts/kafka.sh" stop "$work/kafka" >/dev/null 2>&1 || true
  "$OUTBOX_ROOT/scripts/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
eval "$("$OUTBOX_ROOT/scripts/pg.sh" start "$work/pg" 2>/dev/null)"
eval "$("$OUTBOX_ROOT/scripts/kafka.sh" start "$work/kafka" 2>/dev/null)"
export PGHOST PGPORT PGUSER PGDATABASE
psql -q -f "$OUTBOX_ROOT/sql/outbox.sql"
for r in $(seq "$runs"); do
  psql -qAt -c "SELECT pg_create_logical_replication_slot('relay_$r', 'wal2json')" >/dev/null
  psql -qAt -c "SELECT pg_create_logical_replication_slot('recv_$r', 'wal2json')" >/dev/null
done
[ $stages = 0 ] ||
  psql -qAt -c "SELECT pg_create_logical_replication_slot('stages', 'wal2json')" >/dev/null

# Create the topic first, so no run waits for Kafka to auto-create it.
echo warm | kcat -P -b "$OUTBOX_KAFKA_BROKERS" -t outbox.event.order
log "writing $events events, $per_txn per transaction"
t0=$(date +%s.%N)
psql -q -v ON_ERROR_STOP=1 <<SQL
DO \$\$
BEGIN
  FOR t IN 0..($events / $per_txn - 1) LOOP
    INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
    SELECT gen_random_uuid(), 'order', (i % 10000)::text, 'OrderCreated',
           jsonb_build_object('order_id', i, 'customer', 'customer-' || (i % 977),
                              'lines', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (i % 50), 'qty', 1 + i % 5)),
                              'note', repeat('x', 260))
    FROM generate_series(t * $per_txn + 1, t * $per_txn + $per_txn) AS i;
    COMMIT;
  END LOOP;
END
\$\$;
SQL
end_lsn=$(psql -qAt -c "SELECT pg_current_wal_lsn()")
wal_bytes=$(psql -qAt -c "SELECT pg_wal_lsn_diff('$end_lsn', min(restart_lsn)) FROM pg_replication_slots")
log "wrote in $(echo "$(date +%s.%N) - $t0" | bc) s; backlog WAL $((wal_bytes / 1048576)) MiB, end LSN $end_lsn"
# Something to move the walsender past the backlog's end.
psql -q -c "CREATE TABLE IF NOT EXISTS bench_tick (a int); INSERT INTO bench_tick VALUES (1)"

opts=(-o format-version=2 -o include-transaction=true -o include-lsn=true
      -o include-xids=true -o include-timestamp=true -o add-tables=public.outbox
      -o actions=insert)
results=()
for r in $(seq "$runs"); do
  # pg_recvlogical: decode and stream the same WAL to /dev/null.
  s=$(date +%s.%N)
  pg_recvlogical -d "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" \
    --slot "recv_$r" --start --endpos "$end_lsn" "${opts[@]}" -f /dev/null
  recv=$(echo "$(date +%s.%N) - $s" | bc)

  s=$(date +%s.%N)
  "$RELAY" --pg "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" \
    --kafka "$OUTBOX_KAFKA_BROKERS" --slot "relay_$r" --set postgres.create_slot=false \
    --set log.progress_interval_s=0 --set http.listen= \
    --set kafka.properties.linger.ms=${LINGER_MS:-20} 2>"$work/relay_$r.log" &
  pid=$!
  hwm=0
  until [ "$(psql -qAt -c "SELECT confirmed_flush_lsn >= '$end_lsn' FROM pg_replication_slots WHERE slot_name = 'relay_$r'")" = t ]; do
    kill -0 $pid 2>/dev/null || die "relay exited: $(tail -3 "$work/relay_$r.log")"
    h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${h:-0}" -gt "$hwm" ] && hwm=$h
    sleep 0.05
  done
  relay=$(echo "$(date +%s.%N) - $s" | bc)
  read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
  h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status); [ "$h" -gt "$hwm" ] && hwm=$h
  kill -TERM $pid; wait $pid || true
  cpu=$(echo "scale=3; ($ut + $st) / $(getconf CLK_TCK)" | bc)
  printf 'run %d: pg_recvlogical %.2f s (%.0f ev/s) | outbox-relay %.2f s (%.0f ev/s), cpu %.2f s (%.2f us/event), peak RSS %d KiB\n' \
    "$r" "$recv" "$(echo "$events / $recv" | bc -l)" "$relay" "$(echo "$events / $relay" | bc -l)" \
    "$cpu" "$(echo "$cpu * 1000000 / $events" | bc -l)" "$hwm"
  results+=("$recv $relay $cpu $hwm")
  if [ $stages = 1 ]; then
    sc=("$BUILD_DIR/bin/stage_cost")
    pg="host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres"
    {
      "${sc[@]}" recv --pg "$pg" --slot stages --end "$end_lsn" --events "$events" | tail -1
      "${sc[@]}" recv --pg "$pg" --slot stages --end "$end_lsn" --decode
      "${sc[@]}" recv --pg "$pg" --slot stages --end "$end_lsn" --decode --route
      "${sc[@]}" produce --kafka "$OUTBOX_KAFKA_BROKERS" --events "$events" --topic outbox.event.order
      "${sc[@]}" produce --kafka "$OUTBOX_KAFKA_BROKERS" --events "$events" --topic outbox.event.order --no-header |
        sed 's/^produce/produce-no-header/'
      echo "relay events=$events cpu_us_per_event=$(echo "$cpu * 1000000 / $events" | bc -l)"
    } | tee -a "$work/stages.txt"
  fi
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
ev = float(sys.argv[1])
recv, relay, cpu, rss = (statistics.median(c) for c in zip(*rows))
print(f"median of {len(rows)}: pg_recvlogical {recv:.2f} s ({ev/recv:.0f} ev/s), "
      f"outbox-relay {relay:.2f} s ({ev/relay:.0f} ev/s), relay rate / ceiling "
      f"{recv/relay:.2f}, relay cpu {cpu*1e6/ev:.2f} us/event, "
      f"peak RSS max {max(r[3] for r in rows)/1024:.1f} MiB")
' "$events"
[ $stages = 0 ] || python3 - "$work/stages.txt" <<'PY'
import collections, statistics, sys
cost = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f and "=" in line:
        cost[f[0]].append(float(dict(kv.split("=") for kv in f[1:])["cpu_us_per_event"]))
m = {k: statistics.median(v) for k, v in cost.items()}
rows = [
    ("receive: the relay's libpq stream, messages dropped", "recv"),
    ("receive + decode (wal2json, simdjson)", "recv+decode"),
    ("receive + decode + route (Record built)", "recv+decode+route"),
    ("produce: the relay's Kafka sink, same records, header `id`", "produce"),
    ("produce without the header", "produce-no-header"),
]
print("\n| stage, measured alone | CPU µs/event (median) |\n| --- | --- |")
for label, key in rows:
    if key in m:
        print(f"| {label} | {m[key]:.2f} |")
if "recv+decode+route" in m and "produce" in m:
    print(f"| sum: receive + decode + route + produce | {m['recv+decode+route'] + m['produce']:.2f} |")
if "relay" in m:
    print(f"| outbox-relay, the whole drain | {m['relay']:.2f} |")
PY
