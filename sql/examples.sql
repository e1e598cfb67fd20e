-- How an application writes events through the transactional outbox.
-- Run after sql/outbox.sql: psql -f sql/examples.sql runs the examples
-- against an example `orders` table (psql: example 2 uses \gset). Each run
-- publishes two events.
--
-- The rule: the business change and its outbox row commit in ONE
-- transaction. Either both happen or neither does, so an event is published
-- exactly when the change it describes is committed, with no dual write.

CREATE TABLE IF NOT EXISTS public.orders (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id text        NOT NULL,
    total_cents bigint      NOT NULL,
    status      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- 1. The plain pattern: business row + outbox row in one transaction.
--    aggregatetype picks the topic (outbox.event.order), aggregateid is the
--    Kafka key (all events of one order land on one partition, in order),
--    id is the event id consumers de-duplicate on (Kafka header "id").
BEGIN;
WITH new_order AS (
  INSERT INTO public.orders (customer_id, total_cents, status)
  VALUES ('customer-42', 2599, 'created')
  RETURNING id, customer_id, total_cents
)
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
SELECT gen_random_uuid(), 'order', id::text, 'OrderCreated',
       jsonb_build_object('order_id', id, 'customer_id', customer_id,
                          'total_cents', total_cents)
FROM new_order;
COMMIT;

-- 2. The no-janitor pattern (outbox-relay only): insert the event and delete
--    it in the same transaction, as two statements. The INSERT is in the
--    WAL, so outbox-relay publishes it; the table stays empty, so nothing
--    needs cleaning up and the table does not bloat. (outbox-poller reads
--    the table, so it needs the rows: do not use this pattern with it.)
--    The trade-off: `outbox-relay republish` and outbox-audit read rows, so
--    they cannot recover or check these events; a retention window before
--    the DELETE keeps them possible
--    (docs/operations/republish.md#insert-then-delete-outboxes).
--    Not as one statement: a DELETE cannot see rows inserted by a WITH
--    clause of the same statement (one snapshot), so it would delete nothing.
SELECT gen_random_uuid() AS event_id \gset
BEGIN;
UPDATE public.orders SET status = 'paid'
WHERE id = (SELECT max(id) FROM public.orders);
INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload)
SELECT :'event_id', 'order', id::text, 'OrderPaid',
       jsonb_build_object('order_id', id, 'paid_cents', total_cents)
FROM public.orders WHERE id = (SELECT max(id) FROM public.orders);
DELETE FROM public.outbox WHERE id = :'event_id';
COMMIT;

-- 3. From application code, with a parameterized statement (any driver):
--      BEGIN;
--      UPDATE orders SET status = 'shipped' WHERE id = $1;
--      INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
--      VALUES ($2, 'order', $1::text, 'OrderShipped', $3::jsonb);
--      COMMIT;
--    Generate the event id ($2) in the application (UUID) or with
--    gen_random_uuid(). A rollback discards the event with the change.

-- 4. A consumer's inbox: de-duplicate on the "id" header, in the same
--    transaction as the consumer's own changes (delivery is at least once).
CREATE TABLE IF NOT EXISTS public.inbox (
    event_id    uuid        PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now()
);
--      BEGIN;
--      INSERT INTO inbox (event_id) VALUES ($1) ON CONFLICT DO NOTHING;
--      -- 0 rows inserted: a duplicate, skip it. 1 row: apply the event.
--      COMMIT;
