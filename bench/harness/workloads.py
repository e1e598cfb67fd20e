"""What the drain suite writes into PostgreSQL: a backlog of outbox events
(K per transaction) and the mixed WAL (outbox rows a small share of
business-table INSERTs, UPDATEs and DELETEs). Each write returns (seconds,
WAL bytes, LSN of the last backlog transaction's COMMIT record)."""

import time

import psycopg

from harness.db import lsn_int

# Rows per transaction of the mixed workload; every EVERY-th transaction
# carries one outbox row (EVERY = 1 / (share * MIXED_ROWS)).
MIXED_ROWS = 10


def write_backlog(srv, per_txn, n):
    """Writes n events, per_txn per transaction."""
    before = srv.wal_insert_lsn()
    t0 = time.monotonic()
    # synchronous_commit=off only for this writer: the same WAL, written
    # faster (a one-event-per-transaction backlog is fsync-bound).
    with psycopg.connect(srv.conninfo, autocommit=True) as w:
        w.execute("SET synchronous_commit = off")
        w.execute(f"""
DO $$
BEGIN
  FOR t IN 0..({n} / {per_txn} - 1) LOOP
    INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
    SELECT gen_random_uuid(), 'order', (i % 10000)::text, 'OrderCreated',
           jsonb_build_object('order_id', i, 'customer', 'customer-' || (i % 977),
                              'lines', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (i % 50), 'qty', 1 + i % 5)),
                              'note', repeat('x', 260))
    FROM generate_series(t * {per_txn} + 1, t * {per_txn} + {per_txn}) AS i;
    COMMIT;
  END LOOP;
END
$$""")
        end = lsn_int(w.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
    return finish_write(srv, time.monotonic() - t0, before, end)


def finish_write(srv, secs, before, end):
    # A sentinel transaction after the backlog: Debezium confirms a
    # transaction's end only when a later event's offset is committed.
    # Its synchronous commit also flushes the backlog's WAL for
    # pg_waldump, which reads it before a CHECKPOINT may recycle the
    # segments (no slot holds them in the poller's runs).
    srv.q("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
          "VALUES (gen_random_uuid(), 'sentinel', 's', 'Sentinel', '{}')")
    last_commit = srv.last_commit_before(end)
    srv.q("CHECKPOINT")
    return secs, end - before, last_commit


def mixed_every(share):
    """Every how many transactions of the mixed load one carries an outbox
    row, for outbox rows being share of the rows."""
    return max(1, round(1 / (share * MIXED_ROWS)))


def mixed_setup(srv):
    """bench_orders (the business table) and bench_mixed(t_from, t_to,
    every): transactions t_from..t_to-1 of MIXED_ROWS rows each, 7
    INSERTs, 2 UPDATEs (of rows 5 transactions old) and 1 DELETE (of a
    row 50 transactions old); in every every-th transaction one outbox
    INSERT replaces the second UPDATE. Business rows carry a payload of
    the outbox rows' size; UPDATEs log the whole new row (wal_level
    logical), DELETEs the key."""
    srv.q("""
CREATE TABLE IF NOT EXISTS public.bench_orders (
    id         bigint PRIMARY KEY,
    customer   text NOT NULL,
    status     text NOT NULL,
    total      numeric(12, 2) NOT NULL,
    payload    jsonb,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp())""")
    srv.q("""
CREATE OR REPLACE PROCEDURE public.bench_mixed(t_from bigint, t_to bigint, every int)
LANGUAGE plpgsql AS $$
BEGIN
  FOR t IN t_from..t_to - 1 LOOP
    INSERT INTO bench_orders (id, customer, status, total, payload)
    SELECT i, 'customer-' || (i % 977), 'new', (i % 1000) + 0.99,
           jsonb_build_object('order_id', i, 'customer', 'customer-' || (i % 977),
                              'lines', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (i % 50), 'qty', 1 + i % 5)),
                              'note', repeat('y', 260))
    FROM generate_series(t * 7 + 1, t * 7 + 7) AS i;
    UPDATE bench_orders SET status = 'paid', updated_at = clock_timestamp()
      WHERE id = t * 7 - 33;
    IF t % every = 0 THEN
      INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
      VALUES (gen_random_uuid(), 'order', ((t / every) % 10000)::text, 'OrderPaid',
              jsonb_build_object('order_id', t / every, 'customer', 'customer-' || (t % 977),
                                 'lines', jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (t % 50), 'qty', 1 + t % 5)),
                                 'note', repeat('x', 260)));
    ELSE
      UPDATE bench_orders SET status = 'shipped', total = total + 1,
             updated_at = clock_timestamp()
        WHERE id = t * 7 - 34;
    END IF;
    DELETE FROM bench_orders WHERE id = t * 7 - 350;
    COMMIT;
  END LOOP;
END
$$""")


def mixed_seed(srv):
    """Empties bench_orders and seeds the rows the first transactions
    update and delete (ids -999..0)."""
    srv.q("TRUNCATE bench_orders")
    srv.q("CALL bench_mixed(-143, 0, 1000000)")  # ids -1000..0 (a few deleted)


def write_mixed(srv, n, every):
    """Writes the mixed backlog: n outbox events in (n - 1) x every + 1
    transactions, the last with an outbox event (Debezium confirms only up
    to its last event)."""
    ntx = (n - 1) * every + 1  # the last transaction carries an outbox event
    before = srv.wal_insert_lsn()
    t0 = time.monotonic()
    with psycopg.connect(srv.conninfo, autocommit=True) as w:
        w.execute("SET synchronous_commit = off")
        step = 5000
        for t in range(0, ntx, step):
            w.execute(f"CALL bench_mixed({t}, {min(t + step, ntx)}, {every})")
        end = lsn_int(w.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
    return finish_write(srv, time.monotonic() - t0, before, end)
