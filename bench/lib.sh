# Shared shell of the benchmark scripts: one throwaway PostgreSQL and Kafka
# in a work directory. Source it after scripts/lib.sh; it defines functions
# only and changes no options of the caller.

# bench_servers PREFIX [pg-only]: makes the work directory $work
# (/tmp/PREFIX.XXXXXX), starts a PostgreSQL (scripts/pg.sh) and a Kafka
# (scripts/kafka.sh; not with pg-only, for a caller that brings its own
# cluster) in it and exports their variables (PG*, OUTBOX_PG_*,
# OUTBOX_KAFKA_*). At exit (it sets the EXIT trap): the caller's
# bench_on_exit if it defines one (to stop what it started in $work), then
# both servers stop and $work is deleted, unless OUTBOX_BENCH_KEEP=1.
bench_servers() {
  work=$(mktemp -d "/tmp/$1.XXXXXX"); chmod 755 "$work"
  trap bench_stop_servers EXIT
  eval "$("$OUTBOX_ROOT/scripts/pg.sh" start "$work/pg" 2>/dev/null)"
  if [ "${2:-}" != pg-only ]; then
    # The broker's GC log (each pause, wall-clock stamped) and its JMX
    # port on loopback, for the broker's own request times
    # (bench/harness/kafka.py: broker_gc, broker_request_times).
    OUTBOX_BENCH_KAFKA_GC_LOG=$work/kafka-gc.log
    OUTBOX_BENCH_KAFKA_JMX_PORT=$(free_port)
    local jvm_opts="${OUTBOX_KAFKA_JVM_OPTS:-} -Xlog:gc:file=$OUTBOX_BENCH_KAFKA_GC_LOG:time"
    jvm_opts+=" -Dcom.sun.management.jmxremote.port=$OUTBOX_BENCH_KAFKA_JMX_PORT"
    jvm_opts+=" -Dcom.sun.management.jmxremote.rmi.port=$OUTBOX_BENCH_KAFKA_JMX_PORT"
    jvm_opts+=" -Dcom.sun.management.jmxremote.host=127.0.0.1 -Djava.rmi.server.hostname=127.0.0.1"
    jvm_opts+=" -Dcom.sun.management.jmxremote.authenticate=false"
    jvm_opts+=" -Dcom.sun.management.jmxremote.ssl=false"
    eval "$(OUTBOX_KAFKA_JVM_OPTS=$jvm_opts \
      "$OUTBOX_ROOT/scripts/kafka.sh" start "$work/kafka" 2>/dev/null)"
    export OUTBOX_BENCH_KAFKA_GC_LOG OUTBOX_BENCH_KAFKA_JMX_PORT
  fi
  export PGHOST PGPORT PGUSER PGDATABASE OUTBOX_PG_CONNINFO OUTBOX_PG_DIR \
    OUTBOX_KAFKA_BROKERS OUTBOX_KAFKA_DIR
}

bench_stop_servers() {
  if declare -F bench_on_exit >/dev/null; then bench_on_exit || true; fi
  "$OUTBOX_ROOT/scripts/kafka.sh" stop "$work/kafka" >/dev/null 2>&1 || true
  "$OUTBOX_ROOT/scripts/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
  [ "${OUTBOX_BENCH_KEEP:-0}" = 1 ] || rm -rf "$work"
}

# bench_max_slots N [SETTING...]: when N is over pg.sh's 10, sets
# max_replication_slots (and each SETTING, e.g. max_wal_senders) to N and
# restarts PostgreSQL, so every slot can be made before the backlog.
bench_max_slots() {
  local n=$1 s; shift
  [ "$n" -gt 10 ] || return 0
  local sql=(-c "ALTER SYSTEM SET max_replication_slots = $n")
  for s in "$@"; do sql+=(-c "ALTER SYSTEM SET $s = $n"); done
  psql -qAt "${sql[@]}" >/dev/null
  "$OUTBOX_ROOT/scripts/pg.sh" restart "$work/pg" fast >/dev/null 2>&1
}

# bench_summary ARGS...: the tables the benchmarks print from their per-run
# lines (bench/harness/drain_summary.py says which: medians, stages,
# outbox-kinds).
bench_summary() {
  PYTHONPATH="$OUTBOX_ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" python3 -m harness.drain_summary "$@"
}

# doc_block FILE NAME: the fenced code block of the markdown FILE whose
# first line is `# handover: NAME`, without its fences; fails when there is
# none. Scripts run a page's commands through it, so the page and the test
# cannot drift apart.
doc_block() {
  local out
  out=$(awk -v m="# handover: $2" '
    f == 0 && /^```/ { f = 1; next }
    f == 1 && $0 == m { f = 2; print; next }
    f == 1 { f = /^```/ ? 0 : 3; next }
    f == 2 && /^```/ { exit }
    f == 2 { print; next }
    f == 3 && /^```/ { f = 0 }' "$1")
  [ -n "$out" ] || { echo "no block \"$2\" in $1" >&2; return 1; }
  printf '%s\n' "$out"
}
