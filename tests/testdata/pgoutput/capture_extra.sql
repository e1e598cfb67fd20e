-- Run by capture.sh after capture_setup.sql (../wal2json): changes whose
-- pgoutput form the wal2json workload does not show.
SET TimeZone = 'UTC';

-- 10. Type modifiers, custom types, domains, arrays, quoted names.
INSERT INTO public.typed2 VALUES
  (1, 'varchar ü', 'ab', 'bp', 12.5, 12345, '2026-01-02 03:04:05.678',
   '2026-01-02 03:04:05+00', '10:11:12.34', '10:11:12+02', '1 day 02:03:04',
   '3 days 04:05:06.789', '00:00:01.23', '1 year 2 months', B'1010', B'1',
   B'101', B'1', 'x', 'happy', 'green', 7, '{ab,"c d"}', '{sad,ok}', 4242,
   '12.34', '192.168.0.1/24', '[1,10)', 'mixed', 'small'),
  (2, NULL, NULL, NULL, 'NaN', NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL);

-- 11. A TOASTed value, then an update that leaves it alone: pgoutput sends
-- it as 'u' (unchanged), wal2json leaves the column out.
INSERT INTO public.typed2 (id, big)
  SELECT 3, string_agg(md5(g::text), '') FROM generate_series(1, 400) g;
UPDATE public.typed2 SET vc = 'toast kept' WHERE id = 3;

-- 12. Schema change: pgoutput sends a new Relation message before the next
-- change (dropped column gone, added column last).
ALTER TABLE public.typed2 DROP COLUMN m;
ALTER TABLE public.typed2 ADD COLUMN added text DEFAULT 'dflt';
INSERT INTO public.typed2 (id, added) VALUES (4, 'after alter');

-- 13. A transaction replayed from a replication origin: pgoutput sends an
-- Origin message after Begin.
SELECT 'origin' FROM pg_replication_origin_create('upstream_a');
SELECT 'origin' FROM pg_replication_origin_session_setup('upstream_a');
BEGIN;
SELECT 'origin' FROM pg_replication_origin_xact_setup('0/ABCDEF01',
                                                      '2026-01-01 00:00:00+00');
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
VALUES ('00000000-0000-0000-0000-000000000006', 'order', 'o-6',
        'OrderReplicated', '{"from": "upstream"}');
COMMIT;
SELECT 'origin' FROM pg_replication_origin_session_reset();

-- 14. One TRUNCATE of two tables with options: one T message, two relids.
TRUNCATE public.typed2, public.full_ident RESTART IDENTITY;
