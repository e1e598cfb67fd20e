#!/usr/bin/env bash
# Backlog drain: outbox-relay against pg_recvlogical (the walsender's own
# ceiling) on the same WAL, side by side in one run, with each output plugin.
#
#   bench/drain.sh [--events N] [--per-txn K] [--runs R]
#                  [--plugins wal2json,pgoutput] [--stages]
#                  [--payload small|large] [--writers W] [--keys KEYS]
#                  [--relay 'NAME=BINARY [--set KEY=VALUE...]']... [--recv-binary]
#                  [--profile DIR]
#                  (defaults 1000000 10 3 wal2json,pgoutput small 1 10000)
#
# Writes N outbox events (K per transaction, aggregate ids 0..KEYS-1) while
# nothing reads them, from W concurrent writers (each N/W events, so their
# transactions interleave in the WAL), into a WAL that 2R slots per plugin
# were created before. --payload small: ~350-byte jsonb payloads (an order
# with one line); large: ~2.5 KB nested jsonb (an order with 12 lines,
# nested objects, numbers, booleans, non-ASCII text). The slots were created
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
# --relay (repeatable) drains each named relay variant (a binary and its
# settings, e.g. main's build against a branch's, or a setting on and off)
# in every run, each on its own slot, side by side; default one variant,
# "outbox-relay", the build's binary. --recv-binary adds pg_recvlogical with
# pgoutput's binary option (PostgreSQL 14+) as a second ceiling. --profile
# runs each relay under `perf record` (self time per function; PERF_ARGS
# overrides the sampling options, e.g. "--call-graph dwarf") and prints the
# top entries of each profile; its CPU figures then include perf's cost.
# RELAY_ARGS adds arguments to every relay, e.g. RELAY_ARGS="--set
# postgres.pgoutput_binary=off" to drain pgoutput in text; LINGER_MS sets
# every relay's linger.ms (default: the relay's own).
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
payload=small; writers=1; keys=10000; profile=""; recv_binary=0
variants=(); variant_names=()
while [ $# -gt 0 ]; do
  case $1 in
    --events) events=$2; shift 2 ;;
    --per-txn) per_txn=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --plugins) plugins=$2; shift 2 ;;
    --stages) stages=1; shift ;;
    --payload) payload=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --profile) profile=$(realpath -m "$2"); shift 2 ;;
    --relay) variant_names+=("${2%%=*}"); variants+=("${2#*=}"); shift 2 ;;
    --recv-binary) recv_binary=1; shift ;;
    *) die "unknown argument $1" ;;
  esac
done
IFS=, read -ra plugins <<<"$plugins"
case $payload in small|large) ;; *) die "unknown payload $payload (small, large)" ;; esac
[ $((events % (writers * per_txn))) = 0 ] ||
  die "--events must be a multiple of --writers times --per-txn"
if [ -n "$profile" ]; then
  command -v perf >/dev/null || die "--profile needs perf (apt-get install linux-perf)"
  mkdir -p "$profile"
fi
for p in "${plugins[@]}"; do
  case $p in wal2json|pgoutput) ;; *) die "unknown plugin $p (wal2json, pgoutput)" ;; esac
done

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
CMAKE_BUILD_TYPE=Release "$OUTBOX_ROOT/scripts/setup.sh" "$BUILD_DIR" >/dev/null
[ $stages = 0 ] || cmake --build "$BUILD_DIR" --target stage_cost >/dev/null
if [ ${#variants[@]} = 0 ]; then
  variant_names=(outbox-relay); variants=("$BUILD_DIR/bin/outbox-relay")
fi
bench_servers outbox-bench
# Every drain has its own slot, all made before the backlog.
bench_max_slots $((((1 + recv_binary + ${#variants[@]}) * runs + stages) * ${#plugins[@]} + 1))
psql -q -f "$OUTBOX_ROOT/sql/outbox.sql"
psql -q -c "CREATE PUBLICATION outbox_relay FOR TABLE public.outbox WITH (publish = 'insert')"
for p in "${plugins[@]}"; do
  for r in $(seq "$runs"); do
    for slot in "recv_${p}_$r" $([ $recv_binary = 0 ] || echo "recvb_${p}_$r") \
      $(for v in "${!variants[@]}"; do echo "relay${v}_${p}_$r"; done); do
      psql -qAt -c "SELECT pg_create_logical_replication_slot('$slot', '$p')" >/dev/null
    done
  done
  [ $stages = 0 ] ||
    psql -qAt -c "SELECT pg_create_logical_replication_slot('stages_$p', '$p')" >/dev/null
done

# Create the topic first, so no run waits for Kafka to auto-create it.
echo warm | kcat -P -b "$OUTBOX_KAFKA_BROKERS" -t outbox.event.order
# relay_args SLOT: sets ra to what every relay here is started with on
# SLOT, before its variant's own settings (which win).
relay_args() {
  # shellcheck disable=SC2206 # LINGER_MS and RELAY_ARGS are words
  ra=(--pg "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres"
    --kafka "$OUTBOX_KAFKA_BROKERS" --slot "$1" --set postgres.create_slot=false
    --set log.progress_interval_s=0 --set http.listen=
    ${LINGER_MS:+--set kafka.properties.linger.ms=$LINGER_MS} ${RELAY_ARGS:-})
}
# The first transactional producer on a fresh broker waits for its
# transaction coordinator to load (COORDINATOR_LOAD_IN_PROGRESS, 1-2 s
# here) and creates the checkpoint and state topics: an exactly-once
# variant pays that once, before the backlog, not in the first run.
for v in "${!variants[@]}"; do
  case " ${variants[$v]} " in *" kafka.exactly_once=true "*) ;; *) continue ;; esac
  psql -qAt -c "SELECT pg_create_logical_replication_slot('warm_eos', '${plugins[0]}')" >/dev/null
  # shellcheck disable=SC2086 # the settings are words
  set -- ${variants[$v]}
  relay_args warm_eos
  "$1" "${ra[@]}" "${@:2}" --set postgres.plugin="${plugins[0]}" 2>"$work/warm_eos.log" &
  pid=$!
  for _ in $(seq 600); do
    grep -q 'INFO streaming' "$work/warm_eos.log" && break
    kill -0 $pid 2>/dev/null || die "the warm-up relay exited: $(tail -3 "$work/warm_eos.log")"
    sleep 0.1
  done
  grep -q 'INFO streaming' "$work/warm_eos.log" || die "the warm-up relay never streamed"
  kill -TERM $pid; wait $pid || true
  psql -qAt -c "SELECT pg_drop_replication_slot('warm_eos')" >/dev/null
  log "warmed the broker's transaction coordinator (exactly once)"
  break
done
log "writing $events events, $per_txn per transaction, $payload payloads, $keys keys, $writers writer(s)"
if [ "$payload" = small ]; then
  body="jsonb_build_object('order_id', i, 'customer', 'customer-' || (i % 977),
          'lines', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (i % 50), 'qty', 1 + i % 5)),
          'note', repeat('x', 260))"
else
  body="jsonb_build_object('order_id', i, 'customer',
          jsonb_build_object('id', 'customer-' || (i % 977), 'name', 'Zoë Åkerström-' || (i % 977),
                             'vip', i % 7 = 0, 'address', jsonb_build_object('street', (i % 300) || ' Rue de l''Été',
                             'city', 'Zürich', 'zip', lpad((i % 99999)::text, 5, '0'))),
          'lines', (SELECT jsonb_agg(jsonb_build_object('sku', 'SKU-' || ((i + l) % 500), 'qty', 1 + (i + l) % 5,
                                     'price', round(((i * 7 + l) % 10000) / 100.0, 2), 'tags',
                                     jsonb_build_array('t' || (l % 3), 'promo', l % 2 = 0),
                                     'description', 'Line ' || l || ' — ' || repeat('ab', 40)))
                    FROM generate_series(1, 12) AS l),
          'total', round((i % 100000) / 3.0, 4), 'note', repeat('y', 200))"
fi
t0=$(date +%s.%N)
per_writer=$((events / writers))
for w in $(seq 0 $((writers - 1))); do
  psql -q -v ON_ERROR_STOP=1 <<SQL &
DO \$\$
BEGIN
  FOR t IN 0..($per_writer / $per_txn - 1) LOOP
    INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
    SELECT gen_random_uuid(), 'order', (i % $keys)::text, 'OrderCreated', $body
    FROM generate_series($w * $per_writer + t * $per_txn + 1,
                         $w * $per_writer + t * $per_txn + $per_txn) AS i;
    COMMIT;
  END LOOP;
END
\$\$;
SQL
done
for w in $(seq "$writers"); do wait -n || die "a writer failed"; done
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
# broker_cpu_ticks: the Kafka broker's CPU time so far (user + system, all
# its threads), in clock ticks.
broker_cpu_ticks() {
  awk '{print $14 + $15}' "/proc/$(cat "$work/kafka/pid")/stat"
}
# drain_relay NAME SLOT ARGS...: one relay drain of SLOT (ARGS: the
# variant's binary and settings); appends "NAME seconds cpu hwm anon
# broker_cpu" to results (the broker's CPU over the drain: what producing
# the events, and in exactly once the transactions, cost it).
drain_relay() {
  local name=$1 slot=$2 bin=$3 s pid perf_pid="" hwm=0 h anon=0 a relay ut st cpu b0 b1 ra; shift 3
  b0=$(broker_cpu_ticks)
  s=$(date +%s.%N)
  relay_args "$slot"
  # shellcheck disable=SC2086 # PERF_ARGS are words
  ${profile:+perf record -q ${PERF_ARGS:--F 1999} -o "$profile/$slot.data" --} \
    "$bin" "${ra[@]}" "$@" 2>"$work/$slot.log" &
  pid=$!
  if [ -n "$profile" ]; then  # measure the relay, perf's child
    perf_pid=$pid; pid=""
    until [ -n "$pid" ]; do pid=$(pgrep -P "$perf_pid" || true); sleep 0.01; done
  fi
  until [ "$(psql -qAt -c "SELECT confirmed_flush_lsn >= '$end_lsn' FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ]; do
    kill -0 $pid 2>/dev/null || die "relay exited: $(tail -3 "$work/$slot.log")"
    h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${h:-0}" -gt "$hwm" ] && hwm=$h
    a=$(awk '/RssAnon/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${a:-0}" -gt "$anon" ] && anon=$a
    sleep 0.05
  done
  relay=$(echo "$(date +%s.%N) - $s" | bc)
  b1=$(broker_cpu_ticks)
  read -r ut st < <(awk '{print $14, $15}' /proc/$pid/stat)
  h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status); [ "$h" -gt "$hwm" ] && hwm=$h
  kill -TERM $pid; wait "${perf_pid:-$pid}" || true
  cpu=$(echo "scale=3; ($ut + $st) / $(getconf CLK_TCK)" | bc)
  bcpu=$(echo "scale=3; ($b1 - $b0) / $(getconf CLK_TCK)" | bc)
  printf 'run %d, %s: %.2f s (%.0f ev/s), cpu %.2f s (%.2f us/event), peak RSS %d KiB, peak private RSS %d KiB, broker cpu %.2f s (%.2f us/event)\n' \
    "$r" "$name" "$relay" "$(echo "$events / $relay" | bc -l)" \
    "$cpu" "$(echo "$cpu * 1000000 / $events" | bc -l)" "$hwm" "$anon" \
    "$bcpu" "$(echo "$bcpu * 1000000 / $events" | bc -l)"
  results+=("$name $relay $cpu $hwm $anon $bcpu")
  last_cpu=$cpu
}
# drain_recv NAME SLOT OPTIONS...: pg_recvlogical streams SLOT to /dev/null.
drain_recv() {
  local name=$1 slot=$2 s recv; shift 2
  s=$(date +%s.%N)
  pg_recvlogical -d "host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres" \
    --slot "$slot" --start --endpos "$end_lsn" "$@" -f /dev/null
  recv=$(echo "$(date +%s.%N) - $s" | bc)
  printf 'run %d, %s: %.2f s (%.0f ev/s)\n' "$r" "$name" "$recv" "$(echo "$events / $recv" | bc -l)"
  results+=("$name $recv 0 0 0 0")
}
for r in $(seq "$runs"); do
 for p in "${plugins[@]}"; do
  # shellcheck disable=SC2086 # the options are words
  drain_recv "$p/pg_recvlogical" "recv_${p}_$r" ${opts[$p]}
  [ "$recv_binary" = 0 ] || [ "$p" != pgoutput ] ||
    drain_recv "$p/pg_recvlogical-binary" "recvb_${p}_$r" ${opts[$p]} -o binary=true
  for v in "${!variants[@]}"; do
    # shellcheck disable=SC2086 # the settings are words
    drain_relay "$p/${variant_names[$v]}" "relay${v}_${p}_$r" ${variants[$v]} \
      --set postgres.plugin="$p"
  done
  if [ $stages = 1 ]; then
    sc=("$BUILD_DIR/bin/stage_cost")
    pg="host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres"
    recv_stage=("${sc[@]}" recv --plugin "$p" --pg "$pg" --slot "stages_$p" --end "$end_lsn")
    {
      "${recv_stage[@]}" --events "$events" | tail -1
      "${recv_stage[@]}" --decode
      "${recv_stage[@]}" --decode --route
      echo "relay events=$events cpu_us_per_event=$(echo "$last_cpu * 1000000 / $events" | bc -l)"
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
printf '%s\n' "${results[@]}" | bench_summary medians "$events"
[ $stages = 0 ] || bench_summary stages "$work/stages.txt" "${plugins[@]}"
if [ -n "$profile" ]; then
  # The relay's own CPU by function (self time, every thread), per run.
  for f in "$profile"/*.data; do
    perf report -i "$f" --no-children --sort dso,symbol --stdio -g none \
      --percent-limit 0.7 2>/dev/null | grep -v '^#' | grep -v '^$' >"${f%.data}.txt"
    echo "profile $(basename "${f%.data}") (self %, top entries; $f):"
    head -25 "${f%.data}.txt"
  done
fi
