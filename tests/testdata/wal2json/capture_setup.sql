-- Workload whose WAL the *.jsonl files in this folder decode. Run in a fresh
-- cluster (scripts/pg.sh start DIR), then capture.sql. See README.md.
SET TimeZone = 'UTC';
\i sql/outbox.sql

CREATE TABLE public.typed (
    id    integer PRIMARY KEY,
    t     text,
    i     integer,
    b     bigint,
    s     smallint,
    n     numeric,
    r     real,
    d     double precision,
    flag  boolean,
    raw   bytea,
    j     json,
    jb    jsonb,
    u     uuid,
    ts    timestamptz,
    arr   integer[]
);
CREATE TABLE public.full_ident (id integer, note text);
ALTER TABLE public.full_ident REPLICA IDENTITY FULL;

SELECT 'slot' FROM pg_create_logical_replication_slot('decode_all', 'wal2json');
SELECT 'slot' FROM pg_create_logical_replication_slot('decode_outbox', 'wal2json');

-- 1. One outbox insert with a ~400-byte payload (the benchmark's record).
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('6f1c7c1e-4a55-4b8e-9d64-1d2f3c4b5a69', 'order', 'order-1001',
        'OrderCreated',
        '{"orderId": "order-1001", "customer": {"id": "cust-42", "name": "Zoë O''Brien", "email": "zoe@example.com"}, "lines": [{"sku": "SKU-1", "qty": 2, "price": 19.99}, {"sku": "SKU-2", "qty": 1, "price": 5.00}], "note": "leave at door \"back\" \\ side\nthanks", "currency": "EUR", "total": 44.98, "tags": ["new", "priority"], "flags": {"gift": false, "express": true}, "meta": null, "emoji": "😀", "escaped": "\u00e9\t"}');

-- 2. Several rows in one transaction, assorted types, NULLs.
BEGIN;
INSERT INTO public.typed VALUES
  (1, 'plain text', 42, 9007199254740993, -7, 12345.678900, 1.5, -2.25e-10,
   true, '\xdeadbeef00ff'::bytea, '{"a": 1,  "b": [true, null]}',
   '{"k": "v\"q", "nested": {"x": [1, 2.5, "\u00e9"]}, "uni": "日本"}',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2026-11-22 04:54:35.123456+00',
   '{1,2,3}'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL),
  (3, E'tab\there "quote" back\\slash\nnewline ünï', 0, -1, 0, 'NaN', 'Infinity',
   '-Infinity', false, ''::bytea, '"just a string"', '[]', NULL,
   '1999-12-31 23:59:59+00', '{}');
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('00000000-0000-0000-0000-000000000002', 'customer', 'c-7',
        'CustomerRenamed', '{"name": "new"}'),
       ('00000000-0000-0000-0000-000000000003', 'customer', 'c-7',
        'CustomerDeleted', NULL);
COMMIT;

-- 3. Updates and deletes (default identity: the primary key).
UPDATE public.typed SET t = 'changed', flag = NOT flag WHERE id = 1;
UPDATE public.typed SET id = 10 WHERE id = 2;
DELETE FROM public.typed WHERE id = 3;

-- 4. REPLICA IDENTITY FULL: identity carries every column.
INSERT INTO public.full_ident VALUES (1, 'one'), (2, NULL);
UPDATE public.full_ident SET note = 'uno' WHERE id = 1;
DELETE FROM public.full_ident WHERE id = 2;

-- 5. Truncate.
TRUNCATE public.full_ident;

-- 6. Logical decoding messages.
SELECT 'msg' FROM pg_logical_emit_message(true, 'outbox', '{"event": "tx"}');
SELECT 'msg' FROM pg_logical_emit_message(false, 'outbox.nontx', 'plain "text"');
BEGIN;
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('00000000-0000-0000-0000-000000000004', 'order', 'o-2', 'OrderPaid',
        '{"paid": true}');
SELECT 'msg' FROM pg_logical_emit_message(true, 'outbox', E'multi\nline');
COMMIT;

-- 7. A rolled-back transaction: nothing is decoded.
BEGIN;
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('00000000-0000-0000-0000-00000000dead', 'order', 'o-x', 'Never',
        '{}');
ROLLBACK;

-- 8. The no-janitor outbox: insert then delete in one transaction.
BEGIN;
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('00000000-0000-0000-0000-000000000005', 'order', 'o-3', 'OrderShipped',
        '{"shipped": "2026-01-01"}');
DELETE FROM public.outbox WHERE id = '00000000-0000-0000-0000-000000000005';
COMMIT;

-- 9. A transaction touching only another table (filtered slot: B and C only).
INSERT INTO public.typed (id, t) VALUES (4, 'not outbox');
