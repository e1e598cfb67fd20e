-- Run by capture.sh inside capture_setup.sql (../wal2json), right after its
-- slots are created and before its workload: the extra table the pgoutput
-- facts need, the publications and the pgoutput slots. pgoutput reads the
-- publications with the snapshot of the change it decodes, so they must
-- exist before the first change.

-- Types pgoutput announces with a Y message (OIDs past the built-in range).
CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy');
CREATE SCHEMA s2;
CREATE TYPE s2.color AS ENUM ('red', 'green');
CREATE DOMAIN public.posint AS integer CHECK (VALUE > 0);

-- Type names with type modifiers, quoted names, custom types, a TOASTed
-- column; capture_extra.sql writes to it.
CREATE TABLE public.typed2 (
    id      integer PRIMARY KEY,
    vc      varchar(20),
    ch      char(3),
    bp      bpchar,
    num     numeric(10,2),
    num_neg numeric(5,-2),
    ts3     timestamp(3),
    tz0     timestamptz(0),
    t2      time(2),
    ttz     timetz,
    iv      interval,
    iv_ds   interval day to second(3),
    iv_p    interval(2),
    iv_ym   interval year to month,
    bt      bit(4),
    bt_any  "bit",
    vb      varbit(8),
    vb_any  varbit,
    c1      "char",
    mood    public.mood,
    color   s2.color,
    dom     public.posint,
    vc_arr  varchar(5)[],
    mood_arr public.mood[],
    o       oid,
    m       money,
    net     inet,
    rng     int4range,
    "Mixed Case ""q"""  text,
    big     text
);

CREATE PUBLICATION pub_all
    FOR TABLE public.outbox, public.typed, public.full_ident, public.typed2;
CREATE PUBLICATION pub_outbox FOR TABLE public.outbox
    WITH (publish = 'insert');

SELECT 'slot' FROM pg_create_logical_replication_slot('p_all', 'pgoutput');
SELECT 'slot' FROM pg_create_logical_replication_slot('p_outbox', 'pgoutput');
