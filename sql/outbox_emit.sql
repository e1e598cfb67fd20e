-- The tableless outbox: publish an event with a logical decoding message
-- instead of an outbox row. outbox-relay turns every transactional message
-- under outbox.messages.prefix (default 'outbox'; set
-- outbox.messages.enabled: true) into the same Kafka record an outbox row
-- with these fields would give: topic outbox.event.<aggregatetype>, key
-- aggregateid, value payload (jsonb's text), header "id", plus `headers`.
-- No table, no dead rows, no janitor, less WAL. Call it inside the
-- transaction that makes the change, like an INSERT into the outbox:
--
--   BEGIN;
--   UPDATE orders SET status = 'paid' WHERE id = 42;
--   SELECT outbox_emit('order', '42', 'OrderPaid', '{"order_id": 42}');
--   COMMIT;   -- a ROLLBACK discards the event with the change
--
-- It returns the event id (the Kafka header "id" consumers de-duplicate
-- on); pass `id` to choose it yourself. `headers` is a JSON object of
-- header name -> string, number, boolean or null ("id" is reserved).
--
-- The content format, for writing messages without this function
-- (pg_logical_emit_message(true, 'outbox', <content>)): one JSON object,
--   {"id": "<event id>", "aggregatetype": "...", "aggregateid": "...",
--    "type": "...", "payload": <any JSON, or null for a null value>,
--    "headers": {"name": "value", ...}}             -- headers optional
-- A message that is not such an object, or lacks id or aggregateid, is a
-- poison event (outbox.on_invalid: halt or dead_letter). The first argument
-- must be true: non-transactional messages are decoded even when their
-- transaction rolls back, so the relay ignores them (and counts them in
-- outbox_relay_nontransactional_messages_total).
--
-- Who may publish: PostgreSQL lets every role call pg_logical_emit_message,
-- so with outbox.messages.enabled any role that can connect can publish
-- under the prefix. To allow only some roles, revoke it from PUBLIC and
-- grant this function instead (it then runs as its owner):
--   REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, text) FROM PUBLIC;
--   REVOKE EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, text, bytea) FROM PUBLIC;
--   ALTER FUNCTION public.outbox_emit(text, text, text, jsonb, jsonb, uuid, text) SECURITY DEFINER;
--   REVOKE EXECUTE ON FUNCTION public.outbox_emit(text, text, text, jsonb, jsonb, uuid, text) FROM PUBLIC;
--   GRANT EXECUTE ON FUNCTION public.outbox_emit(text, text, text, jsonb, jsonb, uuid, text) TO app;
-- (outbox-relay's own heartbeat, postgres.heartbeat_interval_s, calls
-- pg_logical_emit_message too: grant it to the relay's role then.)
CREATE OR REPLACE FUNCTION public.outbox_emit(
    aggregatetype text,
    aggregateid   text,
    type          text,
    payload       jsonb,
    headers       jsonb DEFAULT NULL,
    id            uuid  DEFAULT gen_random_uuid(),
    prefix        text  DEFAULT 'outbox')
RETURNS uuid
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT outbox_emit.id
  FROM pg_catalog.pg_logical_emit_message(
         true,
         outbox_emit.prefix,
         (jsonb_build_object(
            'id', outbox_emit.id,
            'aggregatetype', outbox_emit.aggregatetype,
            'aggregateid', outbox_emit.aggregateid,
            'type', outbox_emit.type,
            'payload', outbox_emit.payload)
          || CASE WHEN outbox_emit.headers IS NULL THEN '{}'::jsonb
                  ELSE jsonb_build_object('headers', outbox_emit.headers)
             END)::text) AS emitted
$$;
