#!/usr/bin/env bash
# The benchmark suite of issue 5 in one command: backlog drains of
# outbox-relay (with wal2json and with pgoutput), outbox-poller (default and
# tuned), Debezium and pg_recvlogical (wal2json and pgoutput) side by side,
# on one throwaway PostgreSQL and Kafka.
#
#   bench/run.sh [--full] [--events N] [--runs R] [--per-txn 10,1]
#                [--systems relay,relay-pgoutput,debezium,recv-wal2json,recv-pgoutput,
#                           poller,poller-tuned,debezium-X.Y.Z]
#                [--scenarios backlog,mixed,large] [--mixed-events N]
#                [--mixed-rate ROWS_PER_S] [--mixed-seconds S]
#                [--large-events N] [--large-txns T]
#                [--rates 200,1000,3000] [--seconds S] [--no-drain] [--no-latency]
#                [--saturate] [--writers W] [--latency-per-txn K] [--reps R] [--pin]
#                [--results FILE] [--plots DIR]
#                [--sections backlog,mixed,large,pgoutput,eos,latency]
#
# The drain part (bench/run.py) has three scenarios: backlog (N events, K per
# transaction), mixed (outbox rows are 1% of the WAL, the rest INSERTs,
# UPDATEs and DELETEs on another table: a drain of 10k outbox events in 1M
# rows, then a steady load of 10k rows/s for 20 s sampling the WAL the
# relay's slot holds) and large (one transaction of 100k events). --full:
# 20k mixed events (2M rows), 60 s of steady load, 3 large transactions.
# --results and --plots redirect the output from bench/RESULTS.md and
# bench/plots/; --sections writes only those sections of the drain part (the
# rest of the file is kept). With relay-pgoutput among the systems, the
# pgoutput section holds issue 12's targets for it, from the medians of
# every scenario of the run.
#
# Two parts, on the same servers: the backlog drain (bench/run.py) and the
# steady-load latency (bench/latency.py: open-loop writers at each rate for
# S seconds: relay, pollers and Debezium, and relay-pgoutput or
# debezium-X.Y.Z, Debezium release X.Y.Z.Final beside bench/debezium/pom.xml's,
# when --systems names them; each measurement also gives the CPU each process
# used). Default: 200k events per backlog,
# 1 run, 10 and 1 events per transaction; rates 200,1000,3000 for 10 s each
# (about ten minutes in all). --full: 1M events, 3 runs; rates
# 100,500,1000,2000,5000,10000 for 30 s, then doubling (--saturate) until
# each system saturates; a system stops at its first rate not sustained.
# --latency-per-txn K has the writers commit K events per transaction (the
# last one's due time starts it). --pin runs the latency part pinned
# (taskset): PostgreSQL and the writers on CPU 0; Kafka, the system under
# test and the consumer on CPU 1. The latency part writes with bench/loadgen.cc and reads with
# bench/latency_consumer.cc (built here). Each part writes its own section of
# bench/RESULTS.md (the rest of the file is kept) and PNGs in bench/plots/.
# --sections limits what both parts write (latency: the steady-load table).
#
# Exactly-once against at-least-once (issue 14): name relay-eos (and
# relay-eos-<N>ms for kafka.transaction.max_ms=N) with relay in --systems.
# The drains alternate the systems' order every run; --reps R > 1 makes the
# latency part interleave too (every rate for every system in turn, each
# started afresh, R times); the eos section sets medians, spread and ratios
# side by side. The run quoted in bench/RESULTS.md:
#   bench/run.sh --systems relay,relay-eos,relay-eos-20ms --scenarios backlog \
#     --runs 5 --reps 5 --rates 10,200,1000,3000 --sections eos
# Needs: scripts/setup.sh done, Java 17, Maven (Debezium's jars are fetched
# from Maven Central into .cache/debezium once), python3 with psycopg and
# (optional, for plots) matplotlib: pip install 'psycopg[binary]' matplotlib.
# OUTBOX_BUILD_DIR picks the build directory (default build, Release).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

args=(); events=200000; runs=1; drain=1; latency=1; systems=debezium
rates=200,1000,3000; seconds=10
out=(); full=()
lat=()
orig=("$@")
while [ $# -gt 0 ]; do
  case $1 in
    --full) events=1000000; runs=3; rates=100,500,1000,2000,5000,10000; seconds=30
      full=(--mixed-events 20000 --mixed-seconds 60 --large-txns 3); lat+=(--saturate); shift ;;
    --rates) rates=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --no-drain) drain=0; shift ;;
    --no-latency) latency=0; shift ;;
    --events) events=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --systems) args+=("$1" "$2"); lat+=("$1" "$2"); systems=$2; shift 2 ;;  # both parts
    --per-txn|--systems|--poller-batch|--poller-interval|--scenarios|--mixed-events|\
      --mixed-rate|--mixed-seconds|--large-events|--large-txns) args+=("$1" "$2"); shift 2 ;;
    --results|--plots) out+=("$1" "$2"); shift 2 ;;
    --saturate|--pin) lat+=("$1"); shift ;;
    --reps) lat+=("$1" "$2"); shift 2 ;;
    --sections) args+=("$1" "$2"); lat+=("$1" "$2"); shift 2 ;;  # both parts
    --writers) lat+=("$1" "$2"); shift 2 ;;
    --latency-per-txn) lat+=(--per-txn "$2"); shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done

python3 -c 'import psycopg' 2>/dev/null ||
  pip install -q 'psycopg[binary]' || die "python3 needs psycopg: pip install 'psycopg[binary]'"
python3 -c 'import matplotlib' 2>/dev/null || pip install -q matplotlib ||
  log "matplotlib not installed: no plots"

BUILD_DIR=${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}
"$OUTBOX_ROOT/scripts/setup.sh" --no-build >/dev/null
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$OUTBOX_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$BUILD_DIR/CMakeCache.txt" ||
  log "warning: $BUILD_DIR is not a Release build; numbers mean little"
targets=(outbox-relay)
# The poller joins the suite as soon as its target exists.
cmake --build "$BUILD_DIR" --target help 2>/dev/null | grep -q 'outbox-poller' && targets+=(outbox-poller)
cmake --build "$BUILD_DIR" --target "${targets[@]}" >/dev/null
# Debezium's jars only when it runs (every system runs by default);
# debezium-X.Y.Z (the latency part only) is release X.Y.Z.Final.
for s in ${systems//,/ }; do
  case $s in
    debezium) "$OUTBOX_ROOT/bench/debezium.sh" fetch ;;
    debezium-[0-9]*) DEBEZIUM_VERSION=${s#debezium-}.Final "$OUTBOX_ROOT/bench/debezium.sh" fetch ;;
  esac
done

# Debezium instances run.py and latency.py started, before their Kafka.
bench_on_exit() {
  for d in "$work"/dbz_*; do [ -d "$d" ] && "$OUTBOX_ROOT/bench/debezium.sh" stop "$d" >/dev/null 2>&1; done
}
bench_servers outbox-suite
# Every CDC run needs its own slot made before the backlog (5 systems per
# run: both relays, Debezium, pg_recvlogical twice).
bench_max_slots $((5 * runs + 4)) max_wal_senders
log "servers up; work dir $work (OUTBOX_BENCH_KEEP=1 keeps the logs)"
if [ $drain = 1 ]; then
  python3 "$OUTBOX_ROOT/bench/run.py" --bin "$BUILD_DIR/bin" --work "$work" \
    --events "$events" --runs "$runs" --argv="${orig[*]:-}" "${full[@]}" "${args[@]}" \
    "${out[@]}"
fi
if [ $latency = 1 ]; then
  cmake --build "$BUILD_DIR" --target outbox-loadgen outbox-latency-consumer >/dev/null
  python3 "$OUTBOX_ROOT/bench/latency.py" --bin "$BUILD_DIR/bin" --work "$work" \
    --rates "$rates" --seconds "$seconds" --argv="${orig[*]:-}" "${lat[@]}" "${out[@]}"
fi
