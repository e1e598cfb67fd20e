#!/usr/bin/env bash
# Debezium + Outbox Event Router against outbox-relay in Debezium
# compatibility mode, on the same rows, record by record (issues 15, 23),
# for each Debezium version in DEBEZIUM_VERSIONS (default "3.2.3.Final
# 3.7.0.Final": the three context headers of 3.3 and older, and the four,
# with runId, of 3.4 and later).
#
#   bench/debezium_compare.sh [DIR]
#
# Runs Debezium (bench/debezium.sh: Kafka Connect standalone, pgoutput,
# string converters) and two outbox-relay instances side by side on one
# outbox table: one with wal2json, configured by hand with flags
# (outbox.compatibility: debezium plus the phase's options), and one with
# pgoutput, configured by `outbox-relay from-debezium` from the very
# connector.properties Debezium runs (only its slot, topic prefix, brokers,
# state directory, HTTP listener and progress log overridden), so a
# migration by translating the
# connector's configuration is what is checked. It writes
# the same rows once (unicode, escapes, numbers, JSON null, SQL NULL,
# 900 KB payloads, multi-row, rolled-back and savepoint transactions, an
# insert deleted in its transaction, an UPDATE), and compares the topics:
# topic, partition, key, value, headers (names, values, order), the order
# of records in each partition, and timestamps.
#
# For each version, two phases:
#   default  the connector exactly as bench/debezium.sh configures it; the
#            relay with outbox.compatibility=debezium and nothing else
#            but outbox.debezium.run_id for the version (the pgoutput relay:
#            from-debezium --debezium-version VERSION).
#            Both stamp records with their processing time, so timestamps
#            are reported (largest difference), not compared.
#   options  Debezium with table.fields.additional.placement (two headers)
#            and table.field.event.timestamp (a timestamp column); the
#            wal2json relay with the same outbox.fields and
#            outbox.timestamp_column, the pgoutput relay with what
#            from-debezium made of them: the timestamps must match too.
#
# The __debezium.context.runId header (3.4 and later) is a UUIDv7 made once
# per start, so its value differs by nature: each side's must be a UUIDv7
# (version 7, variant 10), one value on every record of its run, made
# before its first record; then it is compared like every other header with
# the value left out (name and position byte for byte).
#
# Topics: Debezium writes outbox.event.<aggregatetype>, the relays
# w2j.outbox.event.<aggregatetype> and pgo.outbox.event.<aggregatetype>
# (the same template behind a prefix, so the three share one broker); the
# comparison strips the prefix. Aggregate types are fresh per run.
#
# Environment: PGHOST/PGPORT/PGUSER/PGDATABASE and OUTBOX_KAFKA_BROKERS for
# servers already running (scripts/pg.sh, scripts/kafka.sh; PostgreSQL with
# wal2json), else it starts throwaway ones in DIR (default a temp dir).
# OUTBOX_BUILD_DIR (default build) holds bin/outbox-relay. Needs Java 17,
# maven (the jars are fetched once by bench/debezium.sh into
# $OUTBOX_CACHE/debezium/VERSION), kcat, jq and python3. About 2 minutes
# per version.
# Exit 0 when every comparison passed.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

work=${1:-$(mktemp -d /tmp/debezium_compare.XXXXXX)}
mkdir -p "$work"; work=$(cd "$work" && pwd)
relay_bin="${OUTBOX_BUILD_DIR:-$OUTBOX_ROOT/build}/bin/outbox-relay"
[ -x "$relay_bin" ] || die "no $relay_bin: build first"
for tool in kcat jq python3 java; do
  command -v $tool >/dev/null || die "$tool not found: run scripts/setup.sh"
done

started_servers=0
pids=()
cleanup() {
  set +e
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  "$OUTBOX_ROOT/bench/debezium.sh" stop "$work/debezium" 2>/dev/null
  if [ -n "${PGHOST:-}" ]; then
    for s in cmp_dbz cmp_w2j cmp_pgo; do
      psql -qAt -c "SELECT pg_drop_replication_slot('$s') FROM pg_replication_slots WHERE slot_name = '$s'" >/dev/null 2>&1
    done
    psql -qAt -c "DROP PUBLICATION IF EXISTS cmp_dbz_pub, cmp_relay_pub" >/dev/null 2>&1
  fi
  if [ $started_servers = 1 ]; then
    "$OUTBOX_ROOT/scripts/kafka.sh" stop "$work/kafka" >/dev/null 2>&1
    "$OUTBOX_ROOT/scripts/pg.sh" stop "$work/pg" >/dev/null 2>&1
  fi
}
trap cleanup EXIT

if [ -z "${PGHOST:-}" ] || [ -z "${OUTBOX_KAFKA_BROKERS:-}" ]; then
  log "starting throwaway PostgreSQL and Kafka in $work"
  started_servers=1
  eval "$("$OUTBOX_ROOT/scripts/pg.sh" start "$work/pg")"
  eval "$("$OUTBOX_ROOT/scripts/kafka.sh" start "$work/kafka")"
fi
export PGHOST PGPORT PGUSER PGDATABASE OUTBOX_KAFKA_BROKERS
conninfo="host=$PGHOST port=$PGPORT user=${PGUSER:-postgres} dbname=${PGDATABASE:-postgres}"
run_id=$(date +%s)$$

psql -q -v ON_ERROR_STOP=1 -f "$OUTBOX_ROOT/sql/outbox.sql" >/dev/null 2>&1
psql -q -v ON_ERROR_STOP=1 2>/dev/null <<'SQL'
DROP PUBLICATION IF EXISTS cmp_dbz_pub, cmp_relay_pub;
DROP TABLE IF EXISTS public.outbox_cmp;
CREATE TABLE public.outbox_cmp (LIKE public.outbox INCLUDING ALL);
-- Debezium reads an event timestamp from a timestamp without time zone
-- (MicroTimestamp); it refuses timestamptz.
ALTER TABLE public.outbox_cmp
  ADD COLUMN occurred_at timestamp(6) DEFAULT (clock_timestamp() AT TIME ZONE 'UTC');
SQL

# write_rows A B: the rows, aggregate types A and B. Prints the number of
# events that must reach Kafka.
write_rows() {
  local a=$1 b=$2
  psql -q -v ON_ERROR_STOP=1 -v a="$a" -v b="$b" >/dev/null <<'SQL'
\set ins 'INSERT INTO public.outbox_cmp (id, aggregatetype, aggregateid, type, payload) VALUES'
-- one transaction, many rows: unicode, escapes, numbers, JSON null, SQL NULL
BEGIN;
:ins (gen_random_uuid(), :'a', 'k-ünï', 'Unicode', '{"s": "café ✓ 😀 漢字 e\u0301", "k": "Ωmega"}');
:ins (gen_random_uuid(), :'a', 'k1', 'Escapes', '{"q": "say \"hi\"", "b": "back\\slash", "nl": "a\nb\tc", "ctl": "\u0001\u001f", "sl": "a/b"}');
:ins (gen_random_uuid(), :'a', 'k2', 'Numbers', '{"i": 1, "neg": -0, "d": 1.50, "e": 1e3, "big": 123456789012345678901234567890, "pi": 3.14159265358979323846264338327950288}');
:ins (gen_random_uuid(), :'a', 'k3', 'JsonNull', 'null');
:ins (gen_random_uuid(), :'a', 'k3', 'SqlNull', NULL);
:ins (gen_random_uuid(), :'b', 'k4', 'Array', '[1, "two", {"three": [3]}, null, true]');
:ins (gen_random_uuid(), :'b', 'k4', 'String', '"just a string"');
:ins (gen_random_uuid(), :'b', 'k5', 'Empty', '{}');
COMMIT;
-- rolled back: never published
BEGIN;
:ins (gen_random_uuid(), :'a', 'k1', 'RolledBack', '{"n": 1}');
:ins (gen_random_uuid(), :'b', 'k4', 'RolledBack', '{"n": 2}');
ROLLBACK;
-- a savepoint rolled back inside a committed transaction
BEGIN;
:ins (gen_random_uuid(), :'a', 'k1', 'BeforeSavepoint', '{"n": 3}');
SAVEPOINT s;
:ins (gen_random_uuid(), :'a', 'k1', 'InSavepoint', '{"n": 4}');
ROLLBACK TO SAVEPOINT s;
:ins (gen_random_uuid(), :'a', 'k1', 'AfterSavepoint', '{"n": 5}');
COMMIT;
-- 900 KB payloads, two in one transaction
BEGIN;
:ins (gen_random_uuid(), :'b', 'big', 'Large', jsonb_build_object('blob', repeat('x', 900000)));
:ins (gen_random_uuid(), :'b', 'big', 'Large', jsonb_build_object('blob', repeat('é', 450000)));
COMMIT;
-- the no-janitor pattern: inserted and deleted in one transaction
BEGIN;
:ins (('00000000-0000-4000-8000-' || lpad(to_hex((random() * 1e9)::bigint), 12, '0'))::uuid, :'a', 'k6', 'Deleted', '{"gone": true}');
DELETE FROM public.outbox_cmp WHERE type = 'Deleted';
COMMIT;
-- an UPDATE of an outbox row: ignored (Debezium warns)
UPDATE public.outbox_cmp SET type = 'Updated' WHERE aggregatetype = :'a' AND type = 'Empty';
SQL
  for i in $(seq 1 20); do
    echo "INSERT INTO public.outbox_cmp (id, aggregatetype, aggregateid, type, payload) VALUES (gen_random_uuid(), '$([ $((i % 2)) = 0 ] && echo "$a" || echo "$b")', 'k$((i % 5))', 'Small', jsonb_build_object('i', $i, 'at', now()));"
  done | psql -q -v ON_ERROR_STOP=1 >/dev/null  # single-row transactions
  echo $((8 + 2 + 2 + 1 + 20))
}

# consume PREFIX AGGS...: every record of PREFIX + outbox.event.<agg>, as
# JSON lines (kcat -J: topic, partition, offset, ts, key, payload, headers).
consume() {
  local prefix=$1; shift
  for agg in "$@"; do
    kcat -b "$OUTBOX_KAFKA_BROKERS" -C -t "${prefix}outbox.event.$agg" -o beginning -e -q -J 2>/dev/null || true
  done
}

count() { consume "$@" | wc -l; }

# writes_run_id VERSION: Debezium 3.4.0 and later write the runId header.
writes_run_id() {
  local major minor
  IFS=. read -r major minor _ <<<"$1"
  [ "$major" -gt 3 ] || { [ "$major" -eq 3 ] && [ "$minor" -ge 4 ]; }
}

start_relay() {  # start_relay NAME SLOT PREFIX ARGS...
  local name=$1 slot=$2 prefix=$3; shift 3
  "$relay_bin" "$@" --kafka "$OUTBOX_KAFKA_BROKERS" --slot "$slot" \
    --topic "${prefix}outbox.event.{aggregatetype}" --set http.listen= \
    --set postgres.state_dir="$work/state-$name" --set log.progress_interval_s=0 \
    >"$work/relay-$name.log" 2>&1 &
  pids+=($!)
  wait_for 30 bash -c "[ \"\$(psql -qAt -c \"SELECT active FROM pg_replication_slots WHERE slot_name = '$slot'\")\" = t ]" ||
    die "relay $name did not stream: $(tail -3 "$work/relay-$name.log")"
}

failures=0
phase() {  # phase NAME DEBEZIUM_CONNECTOR_LINES RELAY_ARGS...; DEBEZIUM_VERSION
  local name=$1-$DEBEZIUM_VERSION connector=$2
  local tag; tag=$(tr -dc '0-9' <<<"$DEBEZIUM_VERSION")
  local a="cmp${run_id}$1v${tag}orders" b="cmp${run_id}$1v${tag}users"
  shift 2
  local run_id_header=false
  writes_run_id "$DEBEZIUM_VERSION" && run_id_header=true
  log "phase $name: starting Debezium $DEBEZIUM_VERSION and the relays"
  DEBEZIUM_SLOT=cmp_dbz DEBEZIUM_PUBLICATION=cmp_dbz_pub DEBEZIUM_TABLE=public.outbox_cmp \
    DEBEZIUM_HEAP="-Xms256m -Xmx1g" DEBEZIUM_CONNECTOR="$connector" \
    "$OUTBOX_ROOT/bench/debezium.sh" start "$work/debezium" >/dev/null
  start_relay w2j cmp_w2j w2j. --pg "$conninfo" --tables public.outbox_cmp \
    --set outbox.compatibility=debezium \
    --set outbox.debezium.run_id=$run_id_header "$@"
  # The connector's own configuration, translated: nothing of the phase's
  # relay flags is passed.
  "$relay_bin" from-debezium "$work/debezium/connector.properties" \
    --debezium-version "$DEBEZIUM_VERSION" \
    >"$work/pgo-$name.yaml" 2>"$work/pgo-$name.notes" ||
    die "from-debezium refused the connector: $(cat "$work/pgo-$name.notes")"
  start_relay pgo cmp_pgo pgo. --config "$work/pgo-$name.yaml"
  local want; want=$(write_rows "$a" "$b") || die "could not write the rows"
  log "phase $name: $want events committed; waiting for all three"
  local deadline=$((SECONDS + 120))
  for prefix in "" w2j. pgo.; do
    until [ "$(count "$prefix" "$a" "$b")" -ge "$want" ]; do
      [ $SECONDS -lt $deadline ] || { log "timed out waiting for ${prefix:-debezium}"; break; }
      sleep 1
    done
  done
  consume "" "$a" "$b" >"$work/$name-debezium.jsonl"
  consume w2j. "$a" "$b" >"$work/$name-wal2json.jsonl"
  consume pgo. "$a" "$b" >"$work/$name-pgoutput.jsonl"
  python3 - "$name" "$want" "$run_id_header" "$work/$name-debezium.jsonl" \
      "$work/$name-wal2json.jsonl" "$work/$name-pgoutput.jsonl" <<'PY' || failures=$((failures + 1))
import json, re, sys
name, want, want_run_id, paths = (sys.argv[1], int(sys.argv[2]),
                                  sys.argv[3] == "true", sys.argv[4:])
compare_ts = name.startswith("options")
RUN_ID = "__debezium.context.runId"
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

def load(path, prefix):
    recs = []
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        topic = r["topic"]
        if prefix and topic.startswith(prefix):
            topic = topic[len(prefix):]
        recs.append({"topic": topic, "partition": r["partition"],
                     "offset": r["offset"], "ts": r["ts"],
                     "key": r.get("key"), "value": r.get("payload"),
                     "headers": r.get("headers") or []})
    recs.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return recs

def event_id(r):
    h = r["headers"]
    return next((h[i + 1] for i in range(0, len(h), 2) if h[i] == "id"), None)

def run_id(recs, who):
    """Checks the runId header's form and that it is one value for the whole
    run, made before the first record; blanks the value in place so the
    headers compare byte for byte otherwise. Returns (value, problems)."""
    values, problems, count = set(), [], 0
    for r in recs:
        h = r["headers"]
        for i in range(0, len(h), 2):
            if h[i] == RUN_ID:
                values.add(h[i + 1])
                h[i + 1] = "(runId)"
                count += 1
    if not want_run_id:
        if count:
            problems.append(f"{who}: {count} records with {RUN_ID}, want none")
        return None, problems
    if count != len(recs):
        problems.append(f"{who}: {RUN_ID} on {count} of {len(recs)} records")
    if len(values) != 1:
        problems.append(f"{who}: {len(values)} distinct {RUN_ID} values in one run, want 1")
    for v in values:
        if not UUID7.match(v or ""):
            problems.append(f"{who}: {RUN_ID} {v!r} is not a UUIDv7")
        elif recs and int(v[:8] + v[9:13], 16) > min(r["ts"] for r in recs):
            problems.append(f"{who}: {RUN_ID} {v} is later than its first record")
    return (next(iter(values)) if len(values) == 1 else None), problems

ref = load(paths[0], "")
ok = True
ref_run_id, problems = run_id(ref, "Debezium")
print(f"phase {name}: Debezium {len(ref)} records (want {want}), "
      f"{RUN_ID + ' ' + str(ref_run_id) if want_run_id else 'no ' + RUN_ID}")
for line in problems:
    print("    " + line)
if len(ref) != want or problems:
    ok = False
for plugin, path in zip(("wal2json (flags)", "pgoutput (from-debezium)"), paths[1:]):
    got = load(path, "w2j." if plugin.startswith("wal2json") else "pgo.")
    got_run_id, diffs = run_id(got, "relay")
    ts_diffs, same_ts = [], 0
    if len(got) != len(ref):
        diffs.append(f"{len(got)} records, Debezium {len(ref)}")
    # Same records in the same partition order: compare position by position.
    for d, r in zip(ref, got):
        for field in ("topic", "partition", "offset", "key", "value", "headers"):
            if d[field] != r[field]:
                v = lambda x: (repr(x)[:120] + "...") if len(repr(x)) > 120 else repr(x)
                diffs.append(f"event {event_id(d)} {field}: debezium {v(d[field])} relay {v(r[field])}")
        ts_diffs.append(r["ts"] - d["ts"])
        same_ts += r["ts"] == d["ts"]
    if compare_ts and same_ts != len(ref):
        diffs.append(f"timestamps: {len(ref) - same_ts} differ")
    sizes = sum(len((r["value"] or "").encode()) for r in got)
    status = "IDENTICAL" if not diffs else "DIFFERENT"
    ts_note = (f"timestamps identical {same_ts}/{len(ref)}" if compare_ts else
               f"timestamps (both processing time) differ by {min(ts_diffs, default=0)}..{max(ts_diffs, default=0)} ms")
    print(f"  relay {plugin}: {len(got)} records, {sizes} value bytes, "
          f"{len({(r['topic'], r['partition']) for r in got})} topic-partitions, "
          f"headers per record {sorted({len(r['headers']) // 2 for r in got})}: "
          f"{status} (topic, partition, offset, key, value, headers); {ts_note}"
          + (f"; {RUN_ID} {got_run_id}" if want_run_id else ""))
    for line in diffs[:10]:
        print("    " + line)
    ok = ok and not diffs
sys.exit(0 if ok else 1)
PY
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  "$OUTBOX_ROOT/bench/debezium.sh" stop "$work/debezium"
  for s in cmp_dbz cmp_w2j cmp_pgo; do
    psql -qAt -c "SELECT pg_drop_replication_slot('$s')" >/dev/null 2>&1 || true
  done
  rm -rf "$work"/state-*
}

versions=${DEBEZIUM_VERSIONS:-3.2.3.Final 3.7.0.Final}
for DEBEZIUM_VERSION in $versions; do
  export DEBEZIUM_VERSION
  "$OUTBOX_ROOT/bench/debezium.sh" fetch
done
for DEBEZIUM_VERSION in $versions; do
  export DEBEZIUM_VERSION
  phase default ""
  phase options "transforms.outbox.table.fields.additional.placement=type:header:eventType,aggregatetype:header
transforms.outbox.table.field.event.timestamp=occurred_at" \
    --set outbox.fields=type:header:eventType,aggregatetype:header \
    --set outbox.timestamp_column=occurred_at
done
if [ $failures = 0 ]; then
  log "Debezium ${versions// /, } and outbox-relay (compatibility: debezium) produced identical records"
else
  log "$failures phase(s) differ; records in $work/*.jsonl"
  trap - EXIT; cleanup; exit 1
fi
