#!/usr/bin/env bash
# Backlog drain: outbox-relay against pg_recvlogical (the walsender's own
# ceiling) on the same WAL, side by side in one run, with each output plugin.
#
#   bench/drain.sh [--events N] [--per-txn K] [--runs R]
#                  [--plugins wal2json,pgoutput] [--stages]
#                                   (defaults 1000000 10 3 wal2json,pgoutput)
#
# Writes N outbox events (~350-byte jsonb payloads, K per transaction) while
# nothing reads them, into a WAL that 2R slots per plugin were created
# before: R for the relay, R for pg_recvlogical. pgoutput streams the
# publication outbox_relay (the relay's default, FOR TABLE public.outbox
# WITH (publish = 'insert')), also made before the backlog: pgoutput looks
# it up as of the WAL it decodes. Then, in each run and for each plugin,
# drains pg_recvlogical's slot and the relay's in turn, and prints per-run
# times, medians and the ratios. For the relay the clock stops when the
# slot's confirmed_flush_lsn reaches the end of the backlog, i.e. when Kafka
# acknowledged every event. Also samples the relay's peak RSS (VmHWM) and
# CPU time from /proc. Durable PostgreSQL defaults.
#
# RELAY_ARGS adds arguments to every relay, e.g. RELAY_ARGS="--set
# postgres.pgoutput_binary=off" to drain pgoutput in text.
#
# --stages also measures, in each run, what each stage of the relay costs
# alone (bench/stage_cost.cc): receiving the same WAL through the relay's
# libpq stream, plus decoding, plus routing (from a slot per plugin that is
# never confirmed, so every run reads the same backlog), and producing as
# many records of the same shape through the relay's Kafka sink, with and
# without the "id" header. Prints a markdown table of medians, a column per
# plugin: what bounds the relay's CPU per event.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

events=1000000; per_txn=10; runs=3; stages=0; plugins=wal2json,pgoutput
while [ $# -gt 0 ]; do
  case $1 in
    --events) events=$2; shift 2 ;;
    --per-txn) per_txn=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --plugins) plugins=$2; shift 2 ;;
    --stages) stages=1; shift ;;
    *) die "unknown argument $1" ;;
  esac
done
IFS=, read -ra plugins <<<"$plugins"
for p in "${plugins[@]}"; do
  case $p in wal2json|pgoutput) ;; *) die "unknown plugin $p (wal2json, pgoutput)" ;; esac
done

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
CMAKE_BUILD_TYPE=Release "$OUTBOX_ROOT/scripts/setup.sh" "$BUILD_DIR" >/dev/null
[ $stages = 0 ] || cmake --build "$BUILD_DIR" --target stage_cost >/dev/null
RELAY="$BUILD_DIR/bin/outbox-relay"
# RELAY_ARGS: more outbox-relay arguments, split on spaces (e.g.
# "--set postgres.pgoutput_binary=off").
read -ra relay_args <<<"${RELAY_ARGS:-}"
bench_servers outbox-bench
# Every drain has its own slot, all made before the backlog.
bench_max_slots $(((2 * runs + stages) * ${#plugins[@]}))
psql -q -f "$OUTBOX_ROOT/sql/outbox.sql"
psql -q -c "CREATE PUBLICATION outbox_relay FOR TABLE public.outbox WITH (publish = 'insert')"
for p in "${plugins[@]}"; do
  for r in $(seq "$runs"); do
    psql -qAt -c "SELECT pg_create_logical_replication_slot('relay_${p}_$r', '$p')" >/dev/null
    psql -qAt -c "SELECT pg_create_logical_replication_slot('recv_${p}_$r', '$p')" >/dev/null
  done
  [ $stages = 0 ] ||
    psql -qAt -c "SELECT pg_create_logical_replication_slot('stages_$p', '$p')" >/dev/null
done

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
# Something past the backlog's end, for stage_cost to stop at: an outbox
# row, as pgoutput sends nothing for a transaction without one.
psql -q -c "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
            VALUES (gen_random_uuid(), 'order', 'end', 'BacklogEnd', '{}')"

declare -A opts
opts[wal2json]="-o format-version=2 -o include-transaction=true -o include-lsn=true
  -o include-xids=true -o include-timestamp=true -o add-tables=public.outbox
  -o actions=insert"
opts[pgoutput]="-o proto_version=1 -o publication_names=outbox_relay"
results=()
for r in $(seq "$runs"); do
 for p in "${plugins[@]}"; do
  # pg_recvlogical: decode and stream the same WAL to /dev/null.
  s=$(date +%s.%N)
  # shellcheck disable=SC2086 # the options are words
  pg_recvlogical -d "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" \
    --slot "recv_${p}_$r" --start --endpos "$end_lsn" ${opts[$p]} -f /dev/null
  recv=$(echo "$(date +%s.%N) - $s" | bc)

  s=$(date +%s.%N)
  "$RELAY" --pg "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" \
    --kafka "$OUTBOX_KAFKA_BROKERS" --slot "relay_${p}_$r" --set postgres.create_slot=false \
    --set postgres.plugin="$p" --set log.progress_interval_s=0 --set http.listen= \
    --set kafka.properties.linger.ms=${LINGER_MS:-20} "${relay_args[@]}" \
    2>"$work/relay_${p}_$r.log" &
  pid=$!
  hwm=0
  until [ "$(psql -qAt -c "SELECT confirmed_flush_lsn >= '$end_lsn' FROM pg_replication_slots WHERE slot_name = 'relay_${p}_$r'")" = t ]; do
    kill -0 $pid 2>/dev/null || die "relay exited: $(tail -3 "$work/relay_${p}_$r.log")"
    h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${h:-0}" -gt "$hwm" ] && hwm=$h
    sleep 0.05
  done
  relay=$(echo "$(date +%s.%N) - $s" | bc)
  read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
  h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status); [ "$h" -gt "$hwm" ] && hwm=$h
  kill -TERM $pid; wait $pid || true
  cpu=$(echo "scale=3; ($ut + $st) / $(getconf CLK_TCK)" | bc)
  printf 'run %d, %s: pg_recvlogical %.2f s (%.0f ev/s) | outbox-relay %.2f s (%.0f ev/s), cpu %.2f s (%.2f us/event), peak RSS %d KiB\n' \
    "$r" "$p" "$recv" "$(echo "$events / $recv" | bc -l)" "$relay" "$(echo "$events / $relay" | bc -l)" \
    "$cpu" "$(echo "$cpu * 1000000 / $events" | bc -l)" "$hwm"
  results+=("$p $recv $relay $cpu $hwm")
  if [ $stages = 1 ]; then
    sc=("$BUILD_DIR/bin/stage_cost")
    pg="host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres"
    recv_stage=("${sc[@]}" recv --plugin "$p" --pg "$pg" --slot "stages_$p" --end "$end_lsn")
    {
      "${recv_stage[@]}" --events "$events" | tail -1
      "${recv_stage[@]}" --decode
      "${recv_stage[@]}" --decode --route
      echo "relay events=$events cpu_us_per_event=$(echo "$cpu * 1000000 / $events" | bc -l)"
    } | sed "s/^/$p /" | tee -a "$work/stages.txt"
  fi
 done
 if [ $stages = 1 ]; then
   {
     "${sc[@]}" produce --kafka "$OUTBOX_KAFKA_BROKERS" --events "$events" --topic outbox.event.order
     "${sc[@]}" produce --kafka "$OUTBOX_KAFKA_BROKERS" --events "$events" --topic outbox.event.order --no-header |
       sed 's/^produce/produce-no-header/'
   } | sed 's/^/any /' | tee -a "$work/stages.txt"
 fi
done
printf '%s\n' "${results[@]}" | python3 -c '
import collections, statistics, sys
by = collections.defaultdict(list)
for l in sys.stdin:
    if l.strip():
        by[l.split()[0]].append(list(map(float, l.split()[1:])))
ev = float(sys.argv[1])
rate = {}
for p, rows in by.items():
    recv, relay, cpu, rss = (statistics.median(c) for c in zip(*rows))
    rate[p] = ev / relay
    print(f"{p}, median of {len(rows)}: pg_recvlogical {recv:.2f} s ({ev/recv:.0f} ev/s), "
          f"outbox-relay {relay:.2f} s ({ev/relay:.0f} ev/s), relay rate / ceiling "
          f"{recv/relay:.2f}, relay cpu {cpu*1e6/ev:.2f} us/event, "
          f"peak RSS max {max(r[3] for r in rows)/1024:.1f} MiB")
if len(rate) == 2:
    ratio = rate["pgoutput"] / rate["wal2json"]
    print(f"outbox-relay drain rate, pgoutput / wal2json: {ratio:.2f}")
' "$events"
[ $stages = 0 ] || python3 - "$work/stages.txt" "${plugins[@]}" <<'PY'
import collections, statistics, sys
cost = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 2 and "=" in line:
        cost[(f[0], f[1])].append(
            float(dict(kv.split("=") for kv in f[2:])["cpu_us_per_event"]))
m = {k: statistics.median(v) for k, v in cost.items()}
plugins = sys.argv[2:]
rows = [
    ("receive: the relay's libpq stream, messages dropped", "recv"),
    ("receive + decode (wal2json: simdjson; pgoutput: binary)", "recv+decode"),
    ("receive + decode + route (Record built)", "recv+decode+route"),
    ("produce: the relay's Kafka sink, same records, header `id`", "produce"),
    ("produce without the header", "produce-no-header"),
]
get = lambda p, k: m.get((p, k), m.get(("any", k)))
cell = lambda v: "–" if v is None else f"{v:.2f}"
print("\n| stage, measured alone (CPU µs/event, median) | " + " | ".join(plugins) + " |")
print("| --- | " + " | ".join("---" for _ in plugins) + " |")
for label, key in rows:
    print(f"| {label} | " + " | ".join(cell(get(p, key)) for p in plugins) + " |")
def total(p):
    a, b = get(p, "recv+decode+route"), get(p, "produce")
    return None if a is None or b is None else a + b
print("| sum: receive + decode + route + produce | "
      + " | ".join(cell(total(p)) for p in plugins) + " |")
print("| outbox-relay, the whole drain | " + " | ".join(cell(get(p, "relay")) for p in plugins) + " |")
PY
