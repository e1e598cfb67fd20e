#!/usr/bin/env bash
# Moving a running Debezium outbox deployment to outbox-relay on Debezium's
# own slot (README: Migrating from Debezium, "Reuse the slot"), while the
# application keeps writing events, and checking what consumers see.
#
#   bench/debezium_migrate.sh
#
# 1. Debezium (bench/debezium.sh: 3.2.3 unless DEBEZIUM_VERSION; pgoutput,
#    a filtered publication)
#    streams an outbox table to outbox.migrate<run>.<aggregatetype>;
#    a writer commits events of 7 keys, 3 per transaction, without pause
#    from here to step 4.
# 2. The connector is handed over with the commands of
#    docs/migration/debezium.md, "Stop the connector", read out of the page
#    (its blocks opening with "# handover: NAME") and run as printed against
#    the worker's REST API: save its configuration, pause, read the offset,
#    stop, check the slot against the offset (inactive, confirmed at the
#    offset's lsn_commit), delete (then GET answers 404); the writer goes
#    on.
# 3. `outbox-relay from-debezium --debezium-version` translates the
#    configuration the REST API returned (the version picks the context
#    headers) and the relay starts from it on the same slot, publication
#    and topics, with postgres.create_slot=false.
# 4. The writer stops; once the slot passed the last commit, outbox-audit
#    (from the same translated configuration) compares the table with the
#    topics: nothing missing, nothing unknown, per-key order kept;
#    duplicates are the events Debezium had published but not confirmed:
#    after that clean stop, the one transaction at the offset's LSN (at
#    most 3 events), as the page says.
#    Every record both wrote (a duplicate) must be byte-identical: key,
#    value, headers. The records' header names must be the same before and
#    after the switch.
#
# Environment: PGHOST/PGPORT/PGUSER/PGDATABASE and OUTBOX_KAFKA_BROKERS for
# servers already running, else throwaway ones (bench/lib.sh).
# OUTBOX_BUILD_DIR (default build) holds bin/outbox-relay and
# bin/outbox-audit. Needs Java 17, maven (bench/debezium.sh fetch), kcat,
# curl, jq and python3. About a minute. Exit 0 when every check passed.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
source "$(dirname "$0")/lib.sh"

bin="${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}/bin"
[ -x "$bin/outbox-relay" ] || die "no $bin/outbox-relay: build first"
for tool in kcat python3 java curl jq; do
  command -v $tool >/dev/null || die "$tool not found: run scripts/setup.sh"
done

run_id=$(date +%s)$$
slot=migrate_dbz_$run_id
pub=migrate_pub_$run_id
table=outbox_migrate_$run_id
writer_pid='' relay_pid=''
bench_on_exit() {
  set +e
  [ -n "$writer_pid" ] && kill "$writer_pid" 2>/dev/null
  [ -n "$relay_pid" ] && kill -TERM "$relay_pid" 2>/dev/null && wait "$relay_pid"
  "$OUTBOX_ROOT/bench/debezium.sh" stop "$work/debezium" 2>/dev/null
  psql -qAt -c "SELECT pg_drop_replication_slot('$slot') FROM pg_replication_slots WHERE slot_name = '$slot'" >/dev/null 2>&1
  psql -qAt -c "DROP PUBLICATION IF EXISTS $pub" -c "DROP TABLE IF EXISTS public.$table" >/dev/null 2>&1
}
if [ -z "${PGHOST:-}" ] || [ -z "${OUTBOX_KAFKA_BROKERS:-}" ]; then
  log "starting throwaway PostgreSQL and Kafka"
  bench_servers outbox-dbz-migrate
else
  work=$(mktemp -d /tmp/outbox-dbz-migrate.XXXXXX)
  trap 'bench_on_exit; rm -rf "$work"' EXIT
  export PGHOST PGPORT PGUSER PGDATABASE OUTBOX_KAFKA_BROKERS
fi

psql -q -v ON_ERROR_STOP=1 -f "$OUTBOX_ROOT/sql/outbox.sql" >/dev/null 2>&1
psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE public.$table (LIKE public.outbox INCLUDING ALL)" >/dev/null
agg="migrate$run_id"
topic_template="outbox.migrate$run_id.\${routedByValue}"

confirmed() {
  psql -qAt -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'"
}

"$OUTBOX_ROOT/bench/debezium.sh" fetch
log "1. Debezium streams $table; the writer starts"
DEBEZIUM_SLOT=$slot DEBEZIUM_PUBLICATION=$pub DEBEZIUM_TABLE=public.$table \
  DEBEZIUM_TOPIC="$topic_template" DEBEZIUM_HEAP="-Xms256m -Xmx1g" \
  "$OUTBOX_ROOT/bench/debezium.sh" start "$work/debezium" >/dev/null
# One session, one transaction of 3 events per statement line, until the
# stop file appears.
{
  i=0
  while [ ! -f "$work/stop-writer" ]; do
    i=$((i + 1))
    echo "INSERT INTO public.$table (id, aggregatetype, aggregateid, type, payload)
          SELECT gen_random_uuid(), '$agg', 'k' || (($i * 3 + g) % 7), 'Step',
                 jsonb_build_object('i', $i, 'g', g, 'at', clock_timestamp())
          FROM generate_series(1, 3) g; SELECT pg_sleep(0.005);"
  done
} | psql -q -v ON_ERROR_STOP=1 >/dev/null 2>&1 &
writer_pid=$!
sleep 4

log "2. the handover commands of docs/migration/debezium.md, as printed"
page="$OUTBOX_ROOT/docs/migration/debezium.md"
export CONNECT="http://127.0.0.1:$(cat "$work/debezium/rest_port")" CONNECTOR=outbox SLOT=$slot
for step in save pause offsets stop check delete; do
  block=$(doc_block "$page" $step) || die "the page lost its \"$step\" block"
  (cd "$work" && timeout 120 bash -euo pipefail -c "$block") >"$work/$step.out" 2>&1 ||
    die "the page's \"$step\" commands failed: $(tail -3 "$work/$step.out")"
  sed "s/^/   $step: /" "$work/$step.out" >&2
done
[ -s "$work/connector.json" ] || die "the \"save\" commands wrote no connector.json"
IFS='|' read -r active handover offset_lsn <"$work/check.out"
[ "$active" = f ] || die "slot $slot is still active after the connector stopped"
[ "$handover" = "$offset_lsn" ] ||
  die "slot $slot is confirmed at $handover, not at the offset's $offset_lsn"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$CONNECT/connectors/$CONNECTOR")" = 404 ] ||
  die "the connector still exists after the \"delete\" commands"
"$OUTBOX_ROOT/bench/debezium.sh" stop "$work/debezium"
before=$(psql -qAt -c "SELECT count(*) FROM public.$table")
log "   slot $slot inactive at $handover, the offset's lsn_commit; $before events committed so far"
sleep 2

log "3. outbox-relay from-debezium, then the relay on the same slot"
"$bin/outbox-relay" from-debezium "$work/connector.json" \
  --debezium-version "$("$OUTBOX_ROOT/bench/debezium.sh" version)" \
  >"$work/relay.yaml" 2>"$work/notes" ||
  die "from-debezium refused the connector: $(cat "$work/notes")"
"$bin/outbox-relay" --config "$work/relay.yaml" --kafka "$OUTBOX_KAFKA_BROKERS" \
  --set postgres.create_slot=false --set http.listen= \
  --set postgres.state_dir="$work/state" --set log.progress_interval_s=0 \
  >"$work/relay.log" 2>&1 &
relay_pid=$!
wait_for 30 bash -c "[ \"\$(psql -qAt -c \"SELECT active FROM pg_replication_slots WHERE slot_name = '$slot'\")\" = t ]" ||
  die "the relay did not stream: $(tail -3 "$work/relay.log")"
sleep 3

log "4. the writer stops; waiting for the slot to pass the last commit"
touch "$work/stop-writer"
wait "$writer_pid" || die "the writer failed"
writer_pid=''
target=$(psql -qAt -c "SELECT pg_current_wal_lsn()")
wait_for 60 bash -c "[ \"\$(psql -qAt -c \"SELECT confirmed_flush_lsn >= '$target' FROM pg_replication_slots WHERE slot_name = '$slot'\")\" = t ]" ||
  die "the relay did not confirm $target: $(tail -3 "$work/relay.log")"
total=$(psql -qAt -c "SELECT count(*) FROM public.$table")
kill -TERM "$relay_pid"; wait "$relay_pid" || die "the relay did not stop cleanly: $(tail -3 "$work/relay.log")"
relay_pid=''

audit_ok=1
"$bin/outbox-audit" --config "$work/relay.yaml" --kafka "$OUTBOX_KAFKA_BROKERS" \
  >"$work/audit.txt" 2>&1 || audit_ok=0
sed 's/^/   /' "$work/audit.txt" >&2
kcat -b "$OUTBOX_KAFKA_BROKERS" -C -t "outbox.migrate$run_id.$agg" -o beginning -e -q -J \
  >"$work/records.jsonl" 2>/dev/null
python3 - "$work/records.jsonl" "$total" "$before" <<'PY' || audit_ok=0
import json, sys
path, total, before = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
recs = [json.loads(line) for line in open(path, encoding="utf-8")]
by_id = {}
for r in recs:
    h = r.get("headers") or []
    rid = next(h[i + 1] for i in range(0, len(h), 2) if h[i] == "id")
    by_id.setdefault(rid, []).append(r)
dups = {k: v for k, v in by_id.items() if len(v) > 1}
differ = [k for k, v in dups.items()
          if any((x["key"], x["payload"], x["headers"]) !=
                 (v[0]["key"], v[0]["payload"], v[0]["headers"]) for x in v[1:])]
names = {tuple(r["headers"][0::2]) for r in recs}
print(f"   {total} events committed ({before} before Debezium stopped), "
      f"{len(recs)} records, {len(by_id)} distinct ids, "
      f"{len(dups)} published by both; identical copies: "
      f"{len(dups) - len(differ)}/{len(dups)}; header name lists: {sorted(names)}",
      file=sys.stderr)
# The page: after a clean stop the relay repeats the one transaction
# committed at the offset's LSN (3 events), nothing else.
ok = len(by_id) == total and not differ and len(names) == 1 and len(dups) <= 3
sys.exit(0 if ok else 1)
PY
if [ $audit_ok = 1 ]; then
  log "migrated: nothing missing, order kept, every copy identical"
else
  log "migration check failed; files in $work"
  OUTBOX_BENCH_KEEP=1
  exit 1
fi
