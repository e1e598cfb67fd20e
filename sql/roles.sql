-- Least-privilege roles. Run as a superuser after sql/outbox.sql.
-- Set passwords out of band (ALTER ROLE ... PASSWORD) or use certificates;
-- never put them in this file.

-- outbox-relay: streams the WAL through a logical replication slot.
-- REPLICATION lets it create and read slots; SELECT lets it check the outbox
-- table's columns at start. It writes nothing, except, with
-- postgres.heartbeat_interval_s, a logical message of its own (EXECUTE on
-- pg_logical_emit_message, which PUBLIC has unless revoked).
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'outbox_relay') THEN
    CREATE ROLE outbox_relay WITH LOGIN REPLICATION;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'outbox_poller') THEN
    CREATE ROLE outbox_poller WITH LOGIN;
  END IF;
END
$$;
GRANT USAGE ON SCHEMA public TO outbox_relay, outbox_poller;
GRANT SELECT ON public.outbox TO outbox_relay;

-- outbox-poller: claims rows, marks them sent, deletes old ones.
GRANT SELECT, UPDATE, DELETE ON public.outbox TO outbox_poller;
