-- Captures the slots filled by capture_setup.sql, one record per line.
-- Run with: psql -qAt -v ON_ERROR_STOP=1 -v out=DIR -f capture.sql
-- (-q matters: without it the "SET" command tags land in the output files).
\set opts '''format-version'', ''2'', ''include-transaction'', ''true'', ''include-lsn'', ''true'', ''include-xids'', ''true'', ''include-timestamp'', ''true'''

-- Same records with non-UTC session time zones (peek: slot not consumed).
SET TimeZone = 'Asia/Kolkata';
\o :out/all_tz_kolkata.jsonl
SELECT data FROM pg_logical_slot_peek_changes('decode_all', NULL, NULL, :opts);
SET TimeZone = 'America/New_York';
\o :out/all_tz_new_york.jsonl
SELECT data FROM pg_logical_slot_peek_changes('decode_all', NULL, NULL, :opts);

SET TimeZone = 'UTC';
\o :out/all.jsonl
SELECT data FROM pg_logical_slot_get_changes('decode_all', NULL, NULL, :opts);
-- The relay's production options: only outbox inserts.
\o :out/outbox_inserts.jsonl
SELECT data FROM pg_logical_slot_get_changes('decode_outbox', NULL, NULL, :opts,
    'add-tables', 'public.outbox', 'actions', 'insert');
\o
