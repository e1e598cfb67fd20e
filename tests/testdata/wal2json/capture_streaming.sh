#!/usr/bin/env bash
# Captures streaming-replication output (one XLogData payload per line, as
# pg_recvlogical writes it) into streaming.jsonl. Needs PGHOST/PGPORT/PGUSER/
# PGDATABASE of a cluster where capture_setup.sql already ran.
set -euo pipefail
cd "$(dirname "$0")"
export PGOPTIONS='-c TimeZone=UTC -c DateStyle=ISO'
psql -qAt -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
SELECT 'slot' FROM pg_create_logical_replication_slot('decode_stream', 'wal2json');
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('00000000-0000-0000-0000-000000000010', 'order', 'o-10', 'OrderCreated',
        '{"stream": [1, {"deep": "\u00fc\\"}]}'),
       ('00000000-0000-0000-0000-000000000011', 'order', 'o-11', 'OrderCreated',
        '{"n": -0.5e3}');
INSERT INTO public.typed (id, t) VALUES (20, 'filtered away');
-- Emitted, but pg_recvlogical stops at the end position before decoding it.
SELECT 'msg' FROM pg_logical_emit_message(false, 'outbox', 'standalone');
SQL
end=$(psql -qAt -c 'SELECT pg_current_wal_lsn()')
pg_recvlogical -d "$PGDATABASE" --start -S decode_stream --no-loop -E "$end" \
  -f streaming.jsonl \
  -o format-version=2 -o include-transaction=true -o include-lsn=true \
  -o include-xids=true -o include-timestamp=true \
  -o add-tables=public.outbox -o actions=insert
psql -qAt -c "SELECT pg_drop_replication_slot('decode_stream')" >/dev/null
