#!/usr/bin/env bash
# Takeover of an active/standby pair (docs/operations/high-availability.md):
# two outbox-relay instances on one slot, writers committing without pause;
# the active one is SIGKILLed, and the time until the standby streams
# (/activez answers 200) is measured. The killed one comes back as the new
# standby, with nothing of its own (postgres.slot_marker kafka, a fresh
# state_dir), and the next kill hits whichever is active.
#
#   bench/takeover.sh [--kills N] [--retry-ms MS]   (defaults 10, 1000)
#
# Then the writer stops, the active relay drains, and outbox-audit must find
# 0 missing events (duplicates are expected: at least once, the killed
# relay's unconfirmed tail is published again). Prints each takeover time,
# the median and the max. Last, with every instance replaced: the slot is
# dropped, and a fresh instance (fresh state_dir) must refuse to create it
# anew (exit 3): the marker lives in Kafka.
#
# Uses the servers of PG*/OUTBOX_KAFKA_BROKERS when set (ctest's
# takeover_test, with --kills 3), else starts throwaway ones (bench/lib.sh).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

kills=10 retry_ms=1000
while [ $# -gt 0 ]; do
  case $1 in
    --kills) kills=$2; shift 2 ;;
    --retry-ms) retry_ms=$2; shift 2 ;;
    *) die "usage: $0 [--kills N] [--retry-ms MS]" ;;
  esac
done
bin="${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}/bin"
[ -x "$bin/outbox-relay" ] || die "no $bin/outbox-relay: build first"
command -v curl >/dev/null || die "curl not found: run scripts/setup.sh"

run_id=$(date +%s)$$
slot=takeover_$run_id
table=outbox_takeover_$run_id
writer_pid=''
declare -A pid port
bench_on_exit() {
  set +e
  [ -n "$writer_pid" ] && kill "$writer_pid" 2>/dev/null
  for i in a b; do
    [ -n "${pid[$i]:-}" ] && kill -KILL "${pid[$i]}" 2>/dev/null
  done
  wait 2>/dev/null
  psql -qAt -c "SELECT pg_drop_replication_slot('$slot') FROM pg_replication_slots WHERE slot_name = '$slot' AND NOT active" >/dev/null 2>&1
  psql -qAt -c "DROP PUBLICATION IF EXISTS $slot" -c "DROP TABLE IF EXISTS public.$table" >/dev/null 2>&1
}
if [ -z "${PGHOST:-}" ] || [ -z "${OUTBOX_KAFKA_BROKERS:-}" ]; then
  log "starting throwaway PostgreSQL and Kafka"
  bench_servers outbox-takeover
else
  work=$(mktemp -d /tmp/outbox-takeover.XXXXXX)
  trap 'bench_on_exit; [ "${OUTBOX_BENCH_KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT
  export PGHOST PGPORT PGUSER PGDATABASE OUTBOX_KAFKA_BROKERS
fi

psql -q -v ON_ERROR_STOP=1 -f "$OUTBOX_ROOT/sql/outbox.sql" >/dev/null 2>&1
psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE public.$table (LIKE public.outbox INCLUDING ALL)" >/dev/null
agg="takeover$run_id"
cat >"$work/relay.yaml" <<YAML
postgres:
  slot: $slot
  publication: $slot
  slot_marker: kafka
  slot_marker_id: takeover-$run_id
  standby_retry_ms: $retry_ms
outbox:
  topic: "outbox.$agg.{aggregatetype}"
  tables:
    - table: public.$table
kafka:
  brokers: "$OUTBOX_KAFKA_BROKERS"
  state_topic: outbox.relay.state.$run_id
log:
  progress_interval_s: 0
YAML

# start_relay NAME: a new instance with a fresh state_dir and HTTP port.
n_started=0
start_relay() {
  n_started=$((n_started + 1))
  port[$1]=$(free_port)
  "$bin/outbox-relay" --config "$work/relay.yaml" \
    --set http.listen=127.0.0.1:${port[$1]} \
    --set postgres.state_dir="$work/state.$n_started" \
    >>"$work/relay-$1.log" 2>&1 &
  pid[$1]=$!
}
probe() { curl -fs -o /dev/null "http://127.0.0.1:${port[$1]}/$2"; }
other() { [ "$1" = a ] && echo b || echo a; }


start_relay a
wait_for 60 probe a activez || die "a did not stream: $(tail -3 "$work/relay-a.log")"

# The slot exists now: every event from here on is in it.
# One transaction of 3 events per statement line until the stop file.
{
  i=0
  while [ ! -f "$work/stop-writer" ]; do
    i=$((i + 1))
    echo "INSERT INTO public.$table (id, aggregatetype, aggregateid, type, payload)
          SELECT gen_random_uuid(), '$agg', 'k' || (($i * 3 + g) % 7), 'Step',
                 jsonb_build_object('i', $i, 'g', g)
          FROM generate_series(1, 3) g; SELECT pg_sleep(0.005);"
  done
} | psql -q -v ON_ERROR_STOP=1 >/dev/null 2>&1 &
writer_pid=$!

start_relay b
wait_for 60 probe b readyz || die "b is not a ready standby: $(tail -3 "$work/relay-b.log")"
probe b activez && die "b is active while a holds the slot"
active=a
times=()
for k in $(seq 1 "$kills"); do
  sleep 2
  standby=$(other $active)
  probe $standby readyz || die "$standby is not a ready standby before kill $k"
  t0=$(date +%s%N)
  kill -KILL "${pid[$active]}"
  wait "${pid[$active]}" 2>/dev/null || true
  until probe $standby activez; do
    [ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt 60 ] ||
      die "kill $k: $standby did not take over: $(tail -3 "$work/relay-$standby.log")"
    sleep 0.01
  done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  times+=("$ms")
  log "kill $k: $active SIGKILLed, $standby streams after $ms ms"
  start_relay $active  # back as the standby, with nothing of its own
  wait_for 60 probe $active readyz || die "the restarted $active is not a ready standby"
  active=$standby
done

touch "$work/stop-writer"
wait "$writer_pid" || die "the writer failed"
writer_pid=''
target=$(psql -qAt -c "SELECT pg_current_wal_lsn()")
wait_for 60 bash -c "[ \"\$(psql -qAt -c \"SELECT confirmed_flush_lsn >= '$target' FROM pg_replication_slots WHERE slot_name = '$slot'\")\" = t ]" ||
  die "the relay did not confirm $target"
total=$(psql -qAt -c "SELECT count(*) FROM public.$table")
for i in a b; do kill -TERM "${pid[$i]}"; done
for i in a b; do wait "${pid[$i]}" || die "$i did not stop cleanly: $(tail -3 "$work/relay-$i.log")"; done
pid=()

"$bin/outbox-audit" --config "$work/relay.yaml" --max-duplicates 100000000 --json \
  >"$work/audit.json" 2>"$work/audit.err" || true
missing=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["missing"])' "$work/audit.json" 2>/dev/null || echo "?")

sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
max=$(echo "$sorted" | tail -1)
echo "takeover after SIGKILL, $kills kills, standby_retry_ms $retry_ms: median $median ms, max $max ms (each: ${times[*]})"
echo "events $total, outbox-audit missing $missing ($(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("duplicates", d.get("duplicates"), "unknown", d.get("unknown"))' "$work/audit.json" 2>/dev/null))"
[ "$missing" = 0 ] || die "outbox-audit: $(cat "$work/audit.json" "$work/audit.err")"

# Every instance was replaced; the slot is dropped: a fresh one refuses.
psql -qAt -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
code=0
"$bin/outbox-relay" --config "$work/relay.yaml" --set http.listen= \
  --set postgres.state_dir="$work/state.fresh" >"$work/fresh.log" 2>&1 || code=$?
[ "$code" = 3 ] && grep -q "does not exist, but this relay streamed from it before" "$work/fresh.log" ||
  die "a fresh instance did not refuse the dropped slot (exit $code): $(tail -3 "$work/fresh.log")"
echo "dropped slot refused by a fresh instance (exit 3): $(grep -o 'events committed after [0-9A-F/]* are in no slot' "$work/fresh.log" | head -1)"
