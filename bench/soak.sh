#!/usr/bin/env bash
# The soak (issue 34): outbox-relay for a long run at a steady rate on a
# 3-node Kafka cluster, with a fault every few minutes, and an audit of
# every event at the end. Not part of the test command.
#
#   bench/soak.sh [--duration 1h] [--interval 180] [--rate 200] [--seed 1]
#                 [--out DIR] [--exactly-once] [--faults KIND,...]
#                 [--warmup 60] [--every 5] [--writers 4] [--keys 5]
#                 [--per-txn 2] [--rollback-every 5] [--nodes 3] [--heap 384m]
#                 [--down 30] [--lost 120] [--two-lost 60] [--partition 90]
#                 [--drain-timeout 900]
#
# Starts the benchmarks' PostgreSQL (bench/lib.sh's bench_servers, pg-only),
# a KRaft cluster of --nodes (scripts/kafka_cluster.sh; every topic at
# replication factor 3, min.insync.replicas 2; -Xmx of --heap per node) and
# outbox-relay with default settings on a slot of its own (the slot marker
# in the work directory, the status page on a free port; --exactly-once adds
# kafka.exactly_once=true). Once the slot is active, bench/loadgen.cc writes
# --rate events/s for --duration (units s, m, h; bare seconds): --writers
# connections, each with --keys keys of its own (so every key's events
# commit in creation order and the audit can check per-key order),
# --per-txn events per transaction, every --rollback-every-th transaction
# of a writer rolled back, reconnecting through PostgreSQL restarts.
#
# After --warmup seconds, and then every --interval seconds while the
# writers run, one fault drawn at random (bash's RANDOM seeded with --seed,
# so a seed gives the same kinds and the same random nodes; a leader or the
# controller is whichever node holds the role then) from --faults (default
# all):
#   leader-kill     SIGKILL the leader of a random partition of the event
#                   topic, restart it --down seconds later
#   rolling-restart every node in turn: SIGTERM, restart, wait for full ISR
#   node-lost       SIGKILL a random node, restart it --lost seconds later
#   two-nodes-lost  SIGKILL two random nodes (below min.insync.replicas and
#                   the controller quorum: the relay must stall), restart
#                   both --two-lost seconds later
#   controller-kill SIGKILL the active controller, restart it --down s later
#   partition       drop the client traffic of a random node (iptables,
#                   kafka_cluster.sh partition), heal it --partition s later
#   pg-restart      PostgreSQL fast restart (scripts/pg.sh restart fast)
# Before each fault every node is brought up, every partition healed and
# full ISR awaited (anything repaired is logged). Each fault is a line of
# DIR/faults.csv (start and end time, kind, nodes, detail) and of the log.
#
# Every --every seconds harness/soak.py samples the relay's RSS, CPU time,
# open file descriptors and threads (/proc), the slot's lag
# (pg_current_wal_lsn - confirmed_flush_lsn, bytes) and the relay's own
# /metrics into DIR/samples.csv. At the end: the writers stop, the relay
# drains (confirmed_flush_lsn reaches the WAL's end, --drain-timeout
# seconds at most), is stopped with SIGTERM, and outbox-audit (as a
# read_committed consumer with --exactly-once) reads every event of the run;
# the summary (events, faults of each kind, missing, duplicates, order
# violations, RSS at start after warm-up, end and max, fds, their slopes
# per hour) goes to stdout, DIR/summary.txt and DIR/summary.json.
#
# Exit 0 when the audit passed and the relay lived (and exited 0 on SIGTERM)
# and drained; 1 otherwise (DIR/status says why); 2 on bad arguments.
# DIR (default bench/soak-out) also holds relay.log, loadgen.json,
# audit.json, params and, on failure, the cluster's logs. A long run that
# must outlive its terminal:
#   setsid nohup bench/soak.sh --duration 65m --seed 44 --out /tmp/soak \
#     >/tmp/soak/run.log 2>&1 &
# OUTBOX_BUILD_DIR picks the build (default build, Release);
# OUTBOX_KAFKA_VERSION the cluster's Kafka (kafka_cluster.sh's default);
# OUTBOX_BENCH_KEEP=1 keeps the servers' work directory.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

duration=1h; interval=180; rate=200; seed=1; out=$OUTBOX_ROOT/bench/soak-out; eos=0
all_faults=leader-kill,rolling-restart,node-lost,two-nodes-lost,controller-kill,partition,pg-restart
faults=$all_faults; warmup=60; every=5; writers=4; keys=5; per_txn=2; rollback_every=5
nodes=3; heap=384m; down_s=30; lost_s=120; two_lost_s=60; partition_s=90; drain_timeout=900
orig=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --exactly-once) eos=1; shift ;;
    --faults) faults=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --per-txn) per_txn=$2; shift 2 ;;
    --rollback-every) rollback_every=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --heap) heap=$2; shift 2 ;;
    --down) down_s=$2; shift 2 ;;
    --lost) lost_s=$2; shift 2 ;;
    --two-lost) two_lost_s=$2; shift 2 ;;
    --partition) partition_s=$2; shift 2 ;;
    --drain-timeout) drain_timeout=$2; shift 2 ;;
    *) echo "error: unknown argument $1" >&2; exit 2 ;;
  esac
done
# seconds DURATION: 90, 90s, 10m, 1h, 1h30m -> seconds.
seconds() {
  local v=$1 total=0 n
  [[ $v =~ ^([0-9]+h)?([0-9]+m)?([0-9]+s?)?$ ]] && [ -n "$v" ] || return 1
  for n in "${BASH_REMATCH[@]:1}"; do
    case $n in *h) total=$((total + ${n%h} * 3600)) ;; *m) total=$((total + ${n%m} * 60)) ;;
      ?*) total=$((total + ${n%s})) ;; esac
  done
  echo "$total"
}
duration_s=$(seconds "$duration") || { echo "error: bad --duration $duration" >&2; exit 2; }
IFS=, read -ra kinds <<<"$faults"
for k in "${kinds[@]}"; do
  [[ ,$all_faults, == *,$k,* ]] || { echo "error: unknown fault $k (${all_faults})" >&2; exit 2; }
done
[ "$nodes" -ge 3 ] || { echo "error: --nodes must be at least 3" >&2; exit 2; }

mkdir -p "$out"; out=$(cd "$out" && pwd)
rm -f "$out"/{samples.csv,faults.csv,audit.json,audit.err,loadgen.json,loadgen.err,status,summary.txt,summary.json,relay.log,topics.txt}
rm -rf "$out/cluster-logs"
{
  echo "command=bench/soak.sh ${orig[*]}"
  echo "started=$(date -u +%FT%TZ)"
  echo "duration_s=$duration_s interval=$interval rate=$rate seed=$seed exactly_once=$eos"
  echo "faults=$faults warmup=$warmup writers=$writers keys=$keys per_txn=$per_txn rollback_every=$rollback_every"
  echo "nodes=$nodes heap=$heap down=$down_s lost=$lost_s two_lost=$two_lost_s partition=$partition_s"
  echo "commit=$(git -C "$OUTBOX_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$out/params"
status() { echo "$1" >>"$out/status"; }

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$OUTBOX_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$BUILD_DIR/CMakeCache.txt" ||
  log "warning: $BUILD_DIR is not a Release build"
cmake --build "$BUILD_DIR" --target outbox-relay outbox-audit outbox-loadgen >/dev/null
bin=$BUILD_DIR/bin

relay_pid=""; load_pid=""; sampler_pid=""; kdir=""
# At exit: whatever still runs of ours, the iptables rules, the cluster.
bench_on_exit() {
  local p
  for p in $sampler_pid $load_pid $relay_pid; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $sampler_pid $load_pid $relay_pid; do wait "$p" 2>/dev/null || true; done
  if [ -n "$kdir" ]; then
    "$OUTBOX_ROOT/scripts/kafka_cluster.sh" heal "$kdir" >/dev/null 2>&1 || true
    "$OUTBOX_ROOT/scripts/kafka_cluster.sh" stop "$kdir" >/dev/null 2>&1 || true
  fi
}
trap 'exit 143' TERM INT  # so that the EXIT trap stops everything
bench_servers outbox-soak pg-only
log "work dir $work; output $out"
kdir=$work/cluster
eval "$(OUTBOX_KAFKA_CLUSTER_HEAP=$heap "$OUTBOX_ROOT/scripts/kafka_cluster.sh" start "$kdir" "$nodes")"
brokers=$OUTBOX_KAFKA_CLUSTER_BROKERS
echo "kafka=${OUTBOX_KAFKA_CLUSTER_VERSION:-?} brokers=$brokers" >>"$out/params"
status "kafka_version=${OUTBOX_KAFKA_CLUSTER_VERSION:-?}"
log "cluster of $nodes up (Kafka ${OUTBOX_KAFKA_CLUSTER_VERSION:-?}): $brokers"
cluster() { OUTBOX_KAFKA_CLUSTER_HEAP=$heap "$OUTBOX_ROOT/scripts/kafka_cluster.sh" "$1" "$kdir" "${@:2}"; }

psql -q -f "$OUTBOX_ROOT/sql/outbox.sql"
slot=soak; topic=outbox.event.soak; http=127.0.0.1:$(free_port)
relay_args=(--pg "$OUTBOX_PG_CONNINFO" --kafka "$brokers" --slot "$slot"
  --set postgres.state_dir="$work/state" --set http.listen="$http")
[ $eos = 0 ] || relay_args+=(--set kafka.exactly_once=true)
"$bin/outbox-relay" "${relay_args[@]}" 2>"$out/relay.log" &
relay_pid=$!
relay_alive() { kill -0 "$relay_pid" 2>/dev/null; }
q() { PGCONNECT_TIMEOUT=3 psql -qAtX -c "$1" 2>/dev/null; }
deadline=$((SECONDS + 120))
until [ "$(q "SELECT active FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ]; do
  relay_alive || die "the relay exited at start: $(tail -3 "$out/relay.log")"
  [ $SECONDS -lt $deadline ] || die "the relay's slot is not active after 120 s"
  sleep 0.5
done
log "relay up (pid $relay_pid, status page http://$http/)"

PYTHONPATH="$OUTBOX_ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" python3 -m harness.soak sample \
  --pid "$relay_pid" --slot "$slot" --http "$http" --every "$every" --out "$out/samples.csv" &
sampler_pid=$!
"$bin/outbox-loadgen" --pg "$OUTBOX_PG_CONNINFO" --rate "$rate" --seconds "$duration_s" \
  --writers "$writers" --keys "$keys" --per-txn "$per_txn" --rollback-every "$rollback_every" \
  --aggregatetype soak --run soak --reconnect >"$out/loadgen.json" 2>"$out/loadgen.err" &
load_pid=$!
t0=$SECONDS
log "writing $rate events/s for $duration_s s ($writers writers x $keys keys, $per_txn per transaction, every ${rollback_every}th rolled back)"

# ---- faults ----------------------------------------------------------------
echo "start_utc,end_utc,elapsed_s,kind,nodes,detail" >"$out/faults.csv"
relay_died=0
# pause S: sleeps S seconds, watching the relay; fails once it is gone.
pause() {
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do
    relay_alive || { relay_died=1; return 1; }
    sleep 1
  done
  relay_alive || { relay_died=1; return 1; }
}
# pick_node: node=a random node number. Never in a subshell: bash reseeds
# RANDOM there, and the run would not follow its seed.
pick_node() { node=$((1 + RANDOM % nodes)); }
partitions() { kcat -b "$brokers" -L -t "$topic" -m 10 2>/dev/null | grep -c 'partition [0-9]* *, leader' || true; }
# whole: every node up, no partition, full ISR; prints what it repaired.
whole() {
  local i up fixed=""
  cluster heal >/dev/null 2>&1 || true
  up=" $(cluster alive 2>/dev/null | tr '\n' ' ') "
  for i in $(seq "$nodes"); do
    if [[ $up != *" $i "* ]]; then
      cluster restart "$i" >/dev/null 2>&1 || true; fixed="$fixed restarted-$i"
    fi
  done
  cluster wait-isr 300 >/dev/null 2>&1 || fixed="$fixed isr-incomplete"
  echo "${fixed# }"
}
# fault KIND: runs it; sets f_nodes and f_detail.
fault() {
  local a b p n
  f_nodes=""; f_detail=""
  case $1 in
    leader-kill)
      n=$(partitions); [ "${n:-0}" -gt 0 ] || n=1
      p=$((RANDOM % n))
      a=$(cluster leader "$topic" "$p" 2>/dev/null) || a=""
      [ -n "$a" ] || { pick_node; a=$node; f_detail="no leader found; "; }
      f_nodes=$a; f_detail+="partition $p of $n, down ${down_s}s"
      cluster kill "$a" >/dev/null 2>&1 || f_detail+=" (kill failed)"
      pause "$down_s" || return 0
      cluster restart "$a" >/dev/null 2>&1 || f_detail+=" (restart failed)" ;;
    rolling-restart)
      f_nodes=$(seq -s ' ' "$nodes")
      for a in $(seq "$nodes"); do
        cluster term "$a" >/dev/null 2>&1 || f_detail+="term $a failed; "
        relay_alive || { relay_died=1; return 0; }
        cluster restart "$a" >/dev/null 2>&1 || f_detail+="restart $a failed; "
        cluster wait-isr 300 >/dev/null 2>&1 || f_detail+="isr after $a incomplete; "
        relay_alive || { relay_died=1; return 0; }
      done ;;
    node-lost)
      pick_node; a=$node; f_nodes=$a; f_detail="lost ${lost_s}s"
      cluster kill "$a" >/dev/null 2>&1 || f_detail+=" (kill failed)"
      pause "$lost_s" || return 0
      cluster restart "$a" >/dev/null 2>&1 || f_detail+=" (restart failed)" ;;
    two-nodes-lost)
      pick_node; a=$node; b=$(( (a + RANDOM % (nodes - 1)) % nodes + 1 ))
      f_nodes="$a $b"; f_detail="lost ${two_lost_s}s"
      cluster kill "$a" >/dev/null 2>&1 || f_detail+=" (kill $a failed)"
      cluster kill "$b" >/dev/null 2>&1 || f_detail+=" (kill $b failed)"
      # Below min.insync.replicas nothing may be confirmed: the slot's
      # confirmed_flush_lsn from 10 s in (in-flight acknowledgements done)
      # to the restart, in bytes (expected 0).
      local c0 c1
      pause 10 || return 0
      c0=$(q "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
      pause $((two_lost_s > 10 ? two_lost_s - 10 : 0)) || return 0
      c1=$(q "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
      if [ -n "$c0" ] && [ -n "$c1" ]; then
        f_detail+=", confirmed while lost: $(q "SELECT pg_wal_lsn_diff('$c1', '$c0')::bigint") bytes"
      fi
      # Both at once: alone, neither would find a quorum to be ready in.
      cluster restart "$a" >/dev/null 2>&1 & p=$!
      cluster restart "$b" >/dev/null 2>&1 || f_detail+=" (restart $b failed)"
      wait $p || f_detail+=" (restart $a failed)" ;;
    controller-kill)
      a=$(cluster controller 2>/dev/null) || a=""
      [ -n "$a" ] || { pick_node; a=$node; f_detail="no controller found; "; }
      f_nodes=$a; f_detail+="down ${down_s}s"
      cluster kill "$a" >/dev/null 2>&1 || f_detail+=" (kill failed)"
      pause "$down_s" || return 0
      cluster restart "$a" >/dev/null 2>&1 || f_detail+=" (restart failed)" ;;
    partition)
      pick_node; a=$node; f_nodes=$a; f_detail="cut ${partition_s}s"
      cluster partition "$a" >/dev/null 2>&1 || f_detail+=" (partition failed)"
      pause "$partition_s" || { cluster heal "$a" >/dev/null 2>&1 || true; return 0; }
      cluster heal "$a" >/dev/null 2>&1 || f_detail+=" (heal failed)" ;;
    pg-restart)
      f_nodes=pg
      "$OUTBOX_ROOT/scripts/pg.sh" restart "$work/pg" fast >/dev/null 2>&1 ||
        f_detail="restart failed" ;;
  esac
}

RANDOM=$seed
next=$((t0 + warmup)); nf=0
while kill -0 "$load_pid" 2>/dev/null && relay_alive; do
  if [ $SECONDS -lt $next ]; then sleep 1; continue; fi
  [ $nf -gt 0 ] || kcat -b "$brokers" -L 2>/dev/null | grep -E '^ *topic|replicas' >"$out/topics.txt" || true
  repaired=$(whole)
  kind=${kinds[RANDOM % ${#kinds[@]}]}
  kill -0 "$load_pid" 2>/dev/null || break
  start=$(date -u +%FT%TZ); el=$((SECONDS - t0)); nf=$((nf + 1))
  log "fault $nf at ${el}s: $kind${repaired:+ (repaired first: $repaired)}"
  fault "$kind"
  [ -z "$repaired" ] || f_detail+="; repaired first: $repaired"
  echo "$start,$(date -u +%FT%TZ),$el,$kind,$f_nodes,\"$f_detail\"" >>"$out/faults.csv"
  log "fault $nf done: $kind nodes [$f_nodes] $f_detail"
  next=$((next + interval))
  [ $next -gt $SECONDS ] || next=$SECONDS
done
if ! relay_alive; then
  relay_died=1
  log "the relay died at $((SECONDS - t0))s: $(tail -3 "$out/relay.log")"
  status "relay_died_at_s=$((SECONDS - t0))"
  kill -TERM "$load_pid" 2>/dev/null || true
fi
wait "$load_pid" || log "loadgen: $(tail -1 "$out/loadgen.err")"
load_pid=""
log "writers done: $(cat "$out/loadgen.json")"

# ---- drain, stop, audit ----------------------------------------------------
repaired=$(whole); [ -z "$repaired" ] || log "cluster repaired before the drain: $repaired"
end_lsn=$(q "SELECT pg_current_wal_lsn()")
drained=0; d0=$SECONDS
while relay_alive && [ $((SECONDS - d0)) -lt "$drain_timeout" ]; do
  if [ "$(q "SELECT confirmed_flush_lsn >= '$end_lsn' FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ]; then
    drained=1; break
  fi
  sleep 1
done
status "drained=$drained"; status "drain_s=$((SECONDS - d0))"
log "drain: $([ $drained = 1 ] && echo "done in $((SECONDS - d0)) s" || echo "NOT done after $((SECONDS - d0)) s")"
kill -TERM "$sampler_pid" 2>/dev/null || true; wait "$sampler_pid" 2>/dev/null || true; sampler_pid=""
relay_exit=died
if relay_alive; then
  kill -TERM "$relay_pid"
  relay_exit=0; wait "$relay_pid" || relay_exit=$?
else
  relay_died=1; wait "$relay_pid" 2>/dev/null && relay_exit=0 || relay_exit=$?
fi
relay_pid=""
status "relay_died=$relay_died"; status "relay_exit=$relay_exit"
audit_args=(--pg "$OUTBOX_PG_CONNINFO" --kafka "$brokers" --json --timeout-s 900)
[ $eos = 0 ] || audit_args+=(--read-committed)
audit_exit=0
"$bin/outbox-audit" "${audit_args[@]}" >"$out/audit.json" 2>"$out/audit.err" || audit_exit=$?
status "audit_exit=$audit_exit"
log "audit (exit $audit_exit): $(cat "$out/audit.json" "$out/audit.err")"

summ() { PYTHONPATH="$OUTBOX_ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" python3 -m harness.soak summary --dir "$out" --warmup "$warmup" "$@"; }
summ --json >"$out/summary.json" || true
summ | tee "$out/summary.txt" || true
missing=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("missing", -1))' "$out/audit.json" 2>/dev/null || echo -1)
result=0
[ "$missing" = 0 ] || { log "FAIL: missing $missing"; result=1; }
[ $audit_exit = 0 ] || { log "FAIL: the audit failed (exit $audit_exit)"; result=1; }
[ $relay_died = 0 ] || { log "FAIL: the relay died"; result=1; }
[ "$relay_exit" = 0 ] || { log "FAIL: the relay exited $relay_exit on SIGTERM"; result=1; }
[ $drained = 1 ] || { log "FAIL: the relay did not drain in $drain_timeout s"; result=1; }
status "result=$result"; status "finished=$(date -u +%FT%TZ)"
if [ $result != 0 ]; then
  mkdir -p "$out/cluster-logs"
  find "$kdir" -maxdepth 2 -type f \( -name '*.log' -o -name '*.out' \) -size -200M \
    -exec sh -c 'cp "$1" "$2/$(basename "$(dirname "$1")")-$(basename "$1")"' _ {} "$out/cluster-logs" \; 2>/dev/null || true
fi
log "soak $([ $result = 0 ] && echo passed || echo FAILED); $out/summary.txt"
exit $result
