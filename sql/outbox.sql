-- The outbox table. Column names are Debezium's Outbox Event Router
-- defaults, so either relay turns a row into the same record:
--   id             event id, sent in the Kafka header "id" (de-duplication)
--   aggregatetype  picks the topic: outbox.event.<aggregatetype>
--   aggregateid    the Kafka key: one aggregate's events stay on one partition
--   type           event type, sent in a header when configured
--   payload        the Kafka value, produced byte for byte as JSON text
-- The remaining columns serve outbox-poller (the polling relay); outbox-relay
-- reads the WAL and ignores them.
CREATE TABLE IF NOT EXISTS public.outbox (
    id              uuid        PRIMARY KEY,
    aggregatetype   text        NOT NULL,
    aggregateid     text        NOT NULL,
    type            text        NOT NULL,
    payload         jsonb,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- poller bookkeeping
    seq             bigint      GENERATED ALWAYS AS IDENTITY,
    sent_at         timestamptz,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error      text,
    dead_lettered_at timestamptz
);

-- The poller claims unsent rows in creation order; the partial index keeps
-- that query proportional to the unsent rows, not the table.
CREATE INDEX IF NOT EXISTS outbox_unsent_idx
    ON public.outbox (seq) WHERE sent_at IS NULL AND dead_lettered_at IS NULL;

-- The poller's janitor deletes sent rows past their retention; this keeps
-- that proportional to the rows it deletes.
CREATE INDEX IF NOT EXISTS outbox_sent_idx
    ON public.outbox (sent_at) WHERE sent_at IS NOT NULL;
