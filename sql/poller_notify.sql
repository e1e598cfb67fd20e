-- Optional LISTEN/NOTIFY wake-up for outbox-poller (poller.notify: true).
-- Run as the table owner after sql/outbox.sql. One NOTIFY per inserting
-- statement (not per row) on the channel poller.notify_channel (default
-- 'outbox_relay'); the payload is the table name. An idle poller wakes at
-- once instead of sleeping poller.interval_ms. NOTIFY is delivered on
-- commit, so the poller wakes when the rows are visible; notifications of
-- one transaction are merged. A missed notification only costs latency:
-- the poller still polls every interval_ms.
--
-- For another table or channel, change "ON public.outbox" and the
-- argument 'outbox_relay' below.
CREATE OR REPLACE FUNCTION public.outbox_poller_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_ARGV[0], TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS outbox_poller_wake ON public.outbox;
CREATE TRIGGER outbox_poller_wake
  AFTER INSERT ON public.outbox
  FOR EACH STATEMENT EXECUTE FUNCTION public.outbox_poller_wake('outbox_relay');
