#!/usr/bin/env bash
# Captures real pgoutput output (and wal2json output of the same WAL) into
# this folder. Needs PGHOST/PGPORT/PGUSER/PGDATABASE of a fresh cluster
# (scripts/pg.sh start DIR) whose role is superuser. See README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root"  # capture_setup.sql reads sql/outbox.sql relative to it
setup=tests/testdata/wal2json/capture_setup.sql

psql_run() { psql -qAt -v ON_ERROR_STOP=1 "$@"; }

# The decoding session's settings decide the text of timestamps, bytea and
# floats; the relay sets the same on its replication connection.
session="SET TimeZone = 'UTC'; SET DateStyle = 'ISO'; SET bytea_output = 'hex';
SET extra_float_digits = 1;"

pgoutput_opts() {  # publication [proto_version]
  echo "'proto_version', '${2:-1}', 'publication_names', '$1', 'messages', 'true'"
}
w2j_opts="'format-version', '2', 'include-transaction', 'true',
  'include-lsn', 'true', 'include-xids', 'true', 'include-timestamp', 'true'"
w2j_relay_opts="$w2j_opts, 'add-tables', 'public.outbox', 'actions', 'insert'"

# One message per line: the LSN the walsender would put in the XLogData
# header (dataStart), a space, the message in lowercase hex.
get_pgoutput() {  # slot publication file
  psql_run -F ' ' -o "$here/$3" -c "$session" -c "SELECT lsn, encode(data, 'hex')
    FROM pg_logical_slot_get_binary_changes('$1', NULL, NULL, $(pgoutput_opts "$2"))"
}
get_wal2json() {  # slot options file
  psql_run -o "$here/$3" -c "$session" -c "SELECT data
    FROM pg_logical_slot_get_changes('$1', NULL, NULL, $2)"
}

# 1. The wal2json workload, with publications and pgoutput slots created
# right after its own slots, then capture_extra.sql.
n=$(grep -n pg_create_logical_replication_slot "$setup" | tail -1 | cut -d: -f1)
{
  head -n "$n" "$setup"
  echo '\i tests/testdata/pgoutput/capture_publications.sql'
  tail -n "+$((n + 1))" "$setup"
  echo '\i tests/testdata/pgoutput/capture_extra.sql'
} | psql_run >/dev/null

# proto_version 2 and 3 without 'streaming' and 'two_phase' must be byte for
# byte version 1.
peek() {  # proto_version
  psql_run -c "$session" -c "SELECT encode(data, 'hex') FROM
    pg_logical_slot_peek_binary_changes('p_all', NULL, NULL, $(pgoutput_opts pub_all "$1"))"
}
v1=$(peek 1)
for v in 2 3; do
  [ "$v1" = "$(peek $v)" ] || { echo "proto_version $v output differs from 1" >&2; exit 1; }
done

get_pgoutput p_all pub_all all.txt
get_pgoutput p_outbox pub_outbox outbox_inserts.txt
get_wal2json decode_all "$w2j_opts" wal2json_all.jsonl
get_wal2json decode_outbox "$w2j_relay_opts" wal2json_outbox_inserts.jsonl

# 2. Logical decoding messages whose content is not text (NUL, invalid
# UTF-8, empty): pgoutput only, wal2json cuts content at a NUL.
psql_run >/dev/null <<'SQL'
SELECT 'slot' FROM pg_create_logical_replication_slot('p_msg', 'pgoutput');
SELECT 'msg' FROM pg_logical_emit_message(false, 'bin', '\x00ff80fe0a00'::bytea);
SELECT 'msg' FROM pg_logical_emit_message(true, 'empty', ''::bytea);
SELECT 'msg' FROM pg_logical_emit_message(false, '', 'no prefix');
-- Nothing flushes a non-transactional message's WAL, and decoding stops at
-- the flushed end: a transaction that writes WAL does (DDL: pgoutput sends
-- nothing for it).
CREATE TABLE public.capture_flush ();
SQL
get_pgoutput p_msg pub_outbox messages.txt

# 3. A ~900 KB outbox payload (the relay's default limits allow 1 MB), with
# unicode and escapes throughout: pgoutput and wal2json with relay options.
psql_run >/dev/null <<'SQL'
SELECT 'slot' FROM pg_create_logical_replication_slot('p_big', 'pgoutput');
SELECT 'slot' FROM pg_create_logical_replication_slot('decode_big', 'wal2json');
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
SELECT '00000000-0000-0000-0000-000000000900', 'order', 'o-900', 'OrderBig',
       jsonb_build_object('items', jsonb_agg(jsonb_build_object(
           'i', g, 'name', E'Zoë "q" \\ 😀 tab\tnl\n', 'price', g * 0.01,
           'ok', g % 2 = 0, 'none', NULL)
         ORDER BY g))
FROM generate_series(1, 9900) g;
SQL
get_pgoutput p_big pub_outbox big.txt
get_wal2json decode_big "$w2j_relay_opts" wal2json_big.jsonl
psql_run -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
wc -c "$here"/*.txt "$here"/*.jsonl
