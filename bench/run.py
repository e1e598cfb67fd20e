#!/usr/bin/env python3
"""Backlog-drain benchmark suite (issue 5): every relay side by side.

Started by bench/run.sh, which builds the binaries and starts a throwaway
PostgreSQL and Kafka (scripts/pg.sh, scripts/kafka.sh). For each transaction
shape (events per transaction) this writes a backlog of outbox events while
nothing reads them, then drains it with each system in turn and measures:

- time from the system's start until every event is acknowledged by Kafka:
  for the CDC relays, until their slot's confirmed_flush_lsn passed the
  backlog's last commit (which they confirm only after Kafka acknowledged
  it); for pg_recvlogical, until it exited at the backlog's end; for the
  poller, until no row is left unsent;
- CPU seconds (utime+stime from /proc/PID/stat, or wait4 for our own
  children; the whole JVM for Debezium) and peak RSS (VmHWM) of the system;
  CPU of the PostgreSQL server (postmaster and all its children) and of the
  Kafka broker over the same interval;
- WAL bytes per event written by the application, and written during the
  drain (the poller's mark-sent UPDATE).

outbox-relay runs twice: with wal2json (relay) and with pgoutput
(relay-pgoutput). The CDC systems drain copies of one WAL: all their slots
exist before the backlog is written, and so do the publications pgoutput
reads (it looks them up as of the WAL it decodes). The poller needs unsent
rows, so each poller run gets the backlog written again into the emptied
table.

Two more scenarios (--scenarios backlog,mixed,large picks them):

- mixed: outbox rows are 1% of the WAL's rows; the rest are INSERTs,
  UPDATEs and DELETEs on a business table (bench_orders) with rows of the
  same size. The same drain as above, on that WAL (the walsender decodes all
  of it; wal2json and pgoutput filter the outbox out), plus a steady phase:
  the mixed load at a fixed rate while the CDC system runs, sampling how far
  its slot trails pg_current_wal_lsn() (WAL retained for it).
- large: a backlog of one (or a few) transaction(s) of 100k events each,
  none of which can be confirmed before its COMMIT: drain time, peak RSS and
  CPU per event, and the server's reorder-buffer spill.

Each scenario writes its own section of bench/RESULTS.md between markers
(everything else in the file is kept) and PNG plots under bench/plots/.
With relay-pgoutput among the systems, one more section puts issue 12's
targets for it in a table, from the medians of every scenario of the run.

Exactly-once (issue 14): the system relay-eos is outbox-relay (wal2json)
with kafka.exactly_once=true, and relay-eos-<N>ms the same with
kafka.transaction.max_ms=N. Listed with relay, they drain copies of the same
WAL in alternating order (the order of the CDC systems rotates every run),
so machine noise hits both modes alike; the eos section sets their medians,
spread and ratio side by side. An exactly-once drain ends, like the others,
when the slot's confirmed_flush_lsn passes the backlog's last commit, which
the relay confirms only after the Kafka transaction holding it committed;
'in Kafka' then counts what a read_committed consumer reads, and Kafka
transactions counts the checkpoint records committed during the drain.
"""

import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

import psycopg

CLK_TCK = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
BEGIN_MARK = "<!-- bench/run.sh: begin -->"
END_MARK = "<!-- bench/run.sh: end -->"
SCENARIOS = ("backlog", "mixed", "large")
MARKS = {"backlog": (BEGIN_MARK, END_MARK),
         "mixed": ("<!-- bench/run.sh mixed: begin -->", "<!-- bench/run.sh mixed: end -->"),
         "large": ("<!-- bench/run.sh large: begin -->", "<!-- bench/run.sh large: end -->"),
         "pgoutput": ("<!-- bench/run.sh pgoutput: begin -->",
                      "<!-- bench/run.sh pgoutput: end -->"),
         "eos": ("<!-- bench/run.sh eos: begin -->", "<!-- bench/run.sh eos: end -->")}
# Sections bench/latency.py writes: --sections may name them too.
LATENCY_SECTIONS = ("latency",)
MIB = 1048576
# Rows per transaction of the mixed workload; every EVERY-th transaction
# carries one outbox row (EVERY = 1 / (share * MIXED_ROWS)).
MIXED_ROWS = 10
WAL2JSON_OPTS = ["format-version=2", "include-transaction=true",
                 "include-lsn=true", "include-xids=true",
                 "include-timestamp=true", "add-tables=public.outbox",
                 "actions=insert"]
# The publications: pg_recvlogical's and Debezium's (every action), and the
# one outbox-relay with pgoutput streams, as the relay itself would create
# it. Both exist before any backlog is written: pgoutput looks a publication
# up in the catalog as of the WAL it decodes.
PUBLICATION = "bench_pub"
RELAY_PUBLICATION = "bench_relay_pub"

# name -> (label, kind)
SYSTEMS = {
    "relay": ("outbox-relay", "cdc"),
    "relay-pgoutput": ("outbox-relay (pgoutput)", "cdc"),
    "debezium": ("Debezium 3.2 (Kafka Connect)", "cdc"),
    "recv-wal2json": ("pg_recvlogical wal2json", "recv"),
    "recv-pgoutput": ("pg_recvlogical pgoutput", "recv"),
    "poller": ("outbox-poller (default)", "poll"),
    "poller-tuned": ("outbox-poller (tuned)", "poll"),
    "relay-eos": ("outbox-relay (exactly-once)", "cdc"),
}
# relay-eos-<N>ms: exactly-once with kafka.transaction.max_ms=N (the default
# is 100); registered by register_eos() when named in --systems.
EOS_RE = re.compile(r"relay-eos(?:-([0-9]+)ms)?$")
# The relay's default kafka.checkpoint_topic (not overridden here).
CHECKPOINT_TOPIC = "outbox.relay.checkpoints"


def eos_settings(system):
    """The relay settings (--set key=value) an exactly-once variant adds,
    [] for any other system."""
    m = EOS_RE.match(system)
    if not m:
        return []
    return ["kafka.exactly_once=true"] + (
        [f"kafka.transaction.max_ms={m.group(1)}"] if m.group(1) else [])


def eos_label(system):
    m = EOS_RE.match(system)
    return ("outbox-relay (exactly-once" +
            (f", transaction.max_ms {m.group(1)}" if m.group(1) else "") + ")")


def register_eos(systems, table, kind=None):
    """Adds every relay-eos-<N>ms named in systems to table (SYSTEMS here,
    bench/latency.py's LABELS there)."""
    for s in systems:
        if EOS_RE.match(s) and s not in table:
            table[s] = eos_label(s) if kind is None else (eos_label(s), kind)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def lsn_int(lsn):
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def lsn_str(v):
    return f"{v >> 32:X}/{v & 0xFFFFFFFF:X}"


def proc_cpu(pid):
    """utime+stime seconds of a live process, None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def proc_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def tree_cpu(root_pid):
    """CPU seconds of root_pid, its reaped children (cutime+cstime) and its
    live children: the whole PostgreSQL server when root is the postmaster."""
    total = 0.0
    try:
        with open(f"/proc/{root_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += sum(int(x) for x in fields[11:15]) / CLK_TCK
    except FileNotFoundError:
        return 0.0
    try:
        children = open(f"/proc/{root_pid}/task/{root_pid}/children").read().split()
    except FileNotFoundError:
        children = []
    for c in children:
        total += proc_cpu(int(c)) or 0.0
    return total


class Bench:
    def __init__(self, args):
        self.a = args
        self.conninfo = os.environ["OUTBOX_PG_CONNINFO"]
        self.brokers = os.environ["OUTBOX_KAFKA_BROKERS"]
        self.pg_dir = os.environ["OUTBOX_PG_DIR"]
        self.kafka_dir = os.environ["OUTBOX_KAFKA_DIR"]
        self.work = args.work
        self.db = psycopg.connect(self.conninfo, autocommit=True)
        with open(os.path.join(self.pg_dir, "data", "postmaster.pid")) as f:
            self.postmaster = int(f.readline())
        self.results = []  # dicts

    # --- helpers -----------------------------------------------------------
    def q(self, sql, params=None):
        cur = self.db.execute(sql, params)
        try:
            return cur.fetchall()
        except psycopg.ProgrammingError:
            return None

    def q1(self, sql, params=None):
        return self.q(sql, params)[0][0]

    def kafka_cpu(self):
        try:
            return proc_cpu(int(open(os.path.join(self.kafka_dir, "pid")).read())) or 0.0
        except (FileNotFoundError, ValueError):
            return 0.0

    def warm_topic(self, topic):
        """Creates the topic before the run (with one record) so no system
        pays for auto-creation during its drain."""
        subprocess.run(["kcat", "-P", "-b", self.brokers, "-t", topic, "-k", "warmup"],
                       input=b"{}", check=True)

    def topic_count(self, topic):
        """Records in the topic (sum of end offsets), minus the warm-up one."""
        return self.end_offsets(topic) - 1

    def committed_count(self, topic):
        """Records a read_committed consumer reads in the topic, minus the
        warm-up one: the end offsets of a transactionally written topic also
        count one commit marker per transaction and partition."""
        out = subprocess.run(
            ["kcat", "-C", "-b", self.brokers, "-t", topic, "-o", "beginning", "-e", "-q",
             "-X", "isolation.level=read_committed", "-f", "x\\n"],
            capture_output=True, check=True).stdout
        return out.count(b"x") - 1

    def end_offsets(self, topic):
        """Sum of the topic's end offsets."""
        out = subprocess.run(
            ["kcat", "-b", self.brokers, "-L", "-t", topic, "-J"],
            capture_output=True, check=True).stdout
        parts = [p["partition"] for p in json.loads(out)["topics"][0]["partitions"]]
        args = ["kcat", "-b", self.brokers, "-Q"]
        for p in parts:
            args += ["-t", f"{topic}:{p}:-1"]
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        total = 0
        for line in out.splitlines():
            if "offset" in line:
                total += int(line.rsplit("offset", 1)[1].split()[0])
        return total

    def write_backlog(self, per_txn, n=None):
        """Writes n events (default --events), per_txn per transaction.
        Returns (seconds, WAL bytes, LSN of the last backlog transaction's
        COMMIT record)."""
        n = n or self.a.events
        before = lsn_int(self.q1("SELECT pg_current_wal_insert_lsn()::text"))
        t0 = time.monotonic()
        # synchronous_commit=off only for this writer: the same WAL, written
        # faster (a one-event-per-transaction backlog is fsync-bound).
        with psycopg.connect(self.conninfo, autocommit=True) as w:
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
        return self.finish_write(time.monotonic() - t0, before, end)

    def finish_write(self, secs, before, end):
        # A sentinel transaction after the backlog: Debezium confirms a
        # transaction's end only when a later event's offset is committed.
        # Its synchronous commit also flushes the backlog's WAL for
        # pg_waldump, which reads it before a CHECKPOINT may recycle the
        # segments (no slot holds them in the poller's runs).
        self.q("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
               "VALUES (gen_random_uuid(), 'sentinel', 's', 'Sentinel', '{}')")
        last_commit = self.last_commit_before(end)
        self.q("CHECKPOINT")
        return secs, end - before, last_commit

    # --- the mixed workload --------------------------------------------------
    def mixed_every(self):
        return max(1, round(1 / (self.a.mixed_share * MIXED_ROWS)))

    def mixed_setup(self):
        """bench_orders (the business table) and bench_mixed(t_from, t_to,
        every): transactions t_from..t_to-1 of MIXED_ROWS rows each, 7
        INSERTs, 2 UPDATEs (of rows 5 transactions old) and 1 DELETE (of a
        row 50 transactions old); in every every-th transaction one outbox
        INSERT replaces the second UPDATE. Business rows carry a payload of
        the outbox rows' size; UPDATEs log the whole new row (wal_level
        logical), DELETEs the key."""
        self.q("""
CREATE TABLE IF NOT EXISTS public.bench_orders (
    id         bigint PRIMARY KEY,
    customer   text NOT NULL,
    status     text NOT NULL,
    total      numeric(12, 2) NOT NULL,
    payload    jsonb,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp())""")
        self.q("""
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

    def mixed_seed(self):
        """Empties bench_orders and seeds the rows the first transactions
        update and delete (ids -999..0)."""
        self.q("TRUNCATE bench_orders")
        self.q("CALL bench_mixed(-143, 0, 1000000)")  # ids -1000..0 (a few deleted)

    def write_mixed(self, n=None):
        """Writes the mixed backlog: n outbox events (default
        --mixed-events) in (n - 1) x every + 1 transactions, the last with an
        outbox event (Debezium confirms only up to its last event). Returns
        like write_backlog."""
        n = n or self.a.mixed_events
        every = self.mixed_every()
        ntx = (n - 1) * every + 1  # the last transaction carries an outbox event
        before = lsn_int(self.q1("SELECT pg_current_wal_insert_lsn()::text"))
        t0 = time.monotonic()
        with psycopg.connect(self.conninfo, autocommit=True) as w:
            w.execute("SET synchronous_commit = off")
            step = 5000
            for t in range(0, ntx, step):
                w.execute(f"CALL bench_mixed({t}, {min(t + step, ntx)}, {every})")
            end = lsn_int(w.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        return self.finish_write(time.monotonic() - t0, before, end)

    def last_commit_before(self, end):
        for window in (262144, 16 * MIB, 256 * MIB):
            p = subprocess.run(
                [f"{PG_BIN}/pg_waldump", "-p", os.path.join(self.pg_dir, "data", "pg_wal"),
                 "-s", lsn_str(max(end - window, 0)), "-e", lsn_str(end), "-r", "Transaction"],
                capture_output=True, text=True)
            commits = [lsn_int(l.split("lsn: ", 1)[1].split(",", 1)[0])
                       for l in p.stdout.splitlines() if "desc: COMMIT" in l]
            if commits:
                return commits[-1]
        raise RuntimeError(f"no COMMIT record found before {lsn_str(end)}: "
                           f"pg_waldump: {p.stderr.strip()[-300:]}")

    # --- one drain ---------------------------------------------------------
    def start(self, system, tag, slot, logf, endpos=None):
        """Starts a system writing to topics bench.<tag>.*; returns (child
        Popen or None, pid, Debezium dir or None)."""
        topic_prefix = f"bench.{tag}."
        if system in ("relay", "relay-pgoutput", "poller", "poller-tuned") or eos_settings(system):
            relay = system.startswith("relay")
            binary = "outbox-relay" if relay else "outbox-poller"
            cmd = [os.path.join(self.a.bin, binary), "--pg", self.conninfo,
                   "--kafka", self.brokers, "--topic", topic_prefix + "{aggregatetype}",
                   "--set", "log.progress_interval_s=0", "--set", "http.listen="]
            if relay:
                cmd += ["--slot", slot, "--set", "postgres.create_slot=false",
                        # Slot markers in the work directory, not the user's.
                        "--set", f"postgres.state_dir={os.path.join(self.work, 'state')}"]
                # Extra settings for both relays, e.g. to measure a trade-off:
                # OUTBOX_BENCH_RELAY_SET="kafka.send_when_idle=false".
                for kv in os.environ.get("OUTBOX_BENCH_RELAY_SET", "").split():
                    cmd += ["--set", kv]
                for kv in eos_settings(system):
                    cmd += ["--set", kv]
            if system == "relay-pgoutput":
                cmd += ["--set", "postgres.plugin=pgoutput",
                        "--set", f"postgres.publication={RELAY_PUBLICATION}"]
            if system == "poller-tuned":
                cmd += ["--set", f"poller.batch_size={self.a.poller_batch}",
                        "--set", "poller.notify=true",
                        "--set", f"poller.interval_ms={self.a.poller_interval}"]
            child = subprocess.Popen(cmd, stdout=logf, stderr=logf)
            return child, child.pid, None
        if system == "debezium":
            env = dict(os.environ, DEBEZIUM_WAIT="0", DEBEZIUM_SLOT=slot,
                       DEBEZIUM_PUBLICATION=PUBLICATION,
                       DEBEZIUM_TOPIC=topic_prefix + "${routedByValue}")
            ddir = os.path.join(self.work, f"dbz_{tag}")
            out = subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "start", ddir],
                                 env=env, capture_output=True, text=True, check=True).stdout
            pid = int([l for l in out.splitlines() if l.startswith("DEBEZIUM_PID=")][0].split("=")[1])
            return None, pid, ddir
        # pg_recvlogical
        cmd = [f"{PG_BIN}/pg_recvlogical", "-d", self.conninfo, "--slot", slot,
               "--start", "--endpos", lsn_str(endpos), "-f", "/dev/null"]
        if system == "recv-wal2json":
            cmd += sum((["-o", o] for o in WAL2JSON_OPTS), [])
        else:
            cmd += ["-o", "proto_version=1", "-o", f"publication_names={PUBLICATION}"]
        child = subprocess.Popen(cmd, stdout=logf, stderr=logf)
        return child, child.pid, None

    def stop(self, child, ddir):
        if ddir is not None:
            subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "stop", ddir], check=True)
        elif child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    def drain(self, system, shape, run, last_commit, n=None):
        n = n or self.a.events
        tag = f"{system.replace('-', '_')}_{shape}_{run}"
        topic_prefix = f"bench.{tag}."
        kind = SYSTEMS[system][1]
        slot = tag
        logf = open(os.path.join(self.work, f"{tag}.log"), "w")
        if kind != "recv":
            self.warm_topic(topic_prefix + "order")
            self.warm_topic(topic_prefix + "sentinel")
        eos = bool(eos_settings(system))
        cp0 = self.end_offsets(CHECKPOINT_TOPIC) if eos else None
        load1 = os.getloadavg()[0]  # the machine is shared: say how busy it was
        wal0 = lsn_int(self.q1("SELECT pg_current_wal_insert_lsn()::text"))
        pg0, k0 = tree_cpu(self.postmaster), self.kafka_cpu()
        t0 = time.monotonic()
        t_active = None
        child, pid, ddir = self.start(system, tag, slot, logf, last_commit)
        hwm = 0
        cpu = 0.0
        rusage = None
        deadline = t0 + self.a.timeout
        while True:
            now = time.monotonic()
            if kind == "recv":
                # VmHWM from /proc: wait4's ru_maxrss would count the
                # Python process the child was forked from.
                hwm = max(hwm, proc_hwm_kib(pid))
                r = os.wait4(pid, os.WNOHANG)
                if r[0] == pid:
                    rusage = r[2]
                    break
            else:
                c = proc_cpu(pid)
                if c is None or (child is not None and child.poll() is not None):
                    raise RuntimeError(f"{system} exited early, see {logf.name}")
                cpu = c
                hwm = max(hwm, proc_hwm_kib(pid))
                if kind == "cdc":
                    row = self.q("SELECT active, confirmed_flush_lsn::text FROM pg_replication_slots "
                                 "WHERE slot_name = %s", (slot,))
                    if row and row[0][0] and t_active is None:
                        t_active = now - t0
                    if row and row[0][1] and lsn_int(row[0][1]) >= last_commit:
                        break
                else:
                    if self.q1("SELECT NOT EXISTS (SELECT 1 FROM outbox WHERE sent_at IS NULL "
                               "AND dead_lettered_at IS NULL)"):
                        break
            if now > deadline:
                raise RuntimeError(f"{system} did not finish in {self.a.timeout} s, see {logf.name}")
            time.sleep(0.02)
        secs = time.monotonic() - t0
        pg_cpu = tree_cpu(self.postmaster) - pg0
        kafka_cpu = self.kafka_cpu() - k0
        wal1 = lsn_int(self.q1("SELECT pg_current_wal_insert_lsn()::text"))
        if rusage is not None:
            cpu = rusage.ru_utime + rusage.ru_stime
        else:
            c = proc_cpu(pid)
            cpu = c if c is not None else cpu
            hwm = max(hwm, proc_hwm_kib(pid))
        self.stop(child, ddir)
        delivered = txns = None
        if eos:
            delivered = self.committed_count(topic_prefix + "order")
            # One checkpoint record and one commit marker per Kafka transaction.
            txns = (self.end_offsets(CHECKPOINT_TOPIC) - cp0) // 2
        elif kind != "recv":
            delivered = self.topic_count(topic_prefix + "order")
        spill = None
        if kind != "poll":
            row = self.q("SELECT spill_bytes FROM pg_stat_replication_slots WHERE slot_name = %s",
                         (slot,))
            spill = row[0][0] if row else None
        res = dict(system=system, shape=shape, run=run, events=n, seconds=secs,
                   rate=n / secs, cpu_s=cpu, cpu_us_per_event=cpu * 1e6 / n,
                   peak_rss_mib=hwm / 1024, pg_cpu_s=pg_cpu, kafka_cpu_s=kafka_cpu,
                   drain_wal_bytes_per_event=max(wal1 - wal0, 0) / n,
                   startup_s=t_active, delivered=delivered, spill_bytes=spill,
                   kafka_txns=txns, loadavg=load1)
        log(f"  {SYSTEMS[system][0]:<30} {secs:7.2f} s {n / secs:9.0f} ev/s  cpu {cpu:6.2f} s "
            f"({res['cpu_us_per_event']:.2f} us/ev)  rss {hwm / 1024:7.1f} MiB  pg cpu {pg_cpu:5.1f} s"
            f"  kafka cpu {kafka_cpu:5.1f} s  wal/ev {res['drain_wal_bytes_per_event']:.0f}"
            + (f"  delivered {delivered}" if delivered is not None else "")
            + (f"  kafka txns {txns}" if txns is not None else "") + f"  load {load1:.1f}")
        if delivered is not None and delivered < n:
            raise RuntimeError(f"{system}: only {delivered} of {n} events in Kafka")
        if eos and delivered != n:
            log(f"  {system}: {delivered} events committed for {n}: duplicates")
        return res

    # --- the suite ---------------------------------------------------------
    def reset(self):
        for (slot,) in self.q("SELECT slot_name FROM pg_replication_slots"):
            self.q("SELECT pg_drop_replication_slot(%s)", (slot,))
        self.q("TRUNCATE outbox")
        if self.q1("SELECT to_regclass('public.bench_orders') IS NOT NULL"):
            self.q("TRUNCATE bench_orders")
        self.q("CHECKPOINT")

    def plugin(self, system):
        return ("pgoutput" if system in ("relay-pgoutput", "recv-pgoutput", "debezium")
                else "wal2json")

    def cdc_count(self):
        return sum(SYSTEMS[s][1] != "poll" for s in self.systems)

    def drain_all(self, shape, n, prepare, write):
        """One backlog shape for every system: the CDC systems drain copies
        of one WAL (slots made before it is written), each poller run gets
        the backlog written anew into the emptied table."""
        cdc = [s for s in self.systems if SYSTEMS[s][1] != "poll"]
        poll = [s for s in self.systems if SYSTEMS[s][1] == "poll"]
        if cdc:
            self.reset()
            prepare()
            for r in range(1, self.a.runs + 1):
                for s in cdc:
                    self.q("SELECT pg_create_logical_replication_slot(%s, %s)",
                           (f"{s.replace('-', '_')}_{shape}_{r}", self.plugin(s)))
            secs, wal, last_commit = write()
            self.writes[shape] = (secs, wal)
            log(f"  wrote in {secs:.1f} s, WAL {wal / MIB:.0f} MiB "
                f"({wal / n:.0f} B/event), last commit {lsn_str(last_commit)}")
            for r in range(1, self.a.runs + 1):
                order = cdc[r - 1:] + cdc[:r - 1]  # rotate the order per run
                for i, s in enumerate(order):
                    self.results.append(self.drain(s, shape, r, last_commit, n))
                    self.results[-1]["position"] = i + 1
        for r in range(1, self.a.runs + 1):
            for s in poll:
                self.reset()
                prepare()
                secs, wal, last_commit = write()
                self.writes.setdefault(shape, (secs, wal))
                self.results.append(self.drain(s, shape, r, last_commit, n))

    def steady(self, system):
        """The mixed load at --mixed-rate rows/s for --mixed-seconds while a
        CDC system runs; samples its slot every 0.5 s: WAL between
        pg_current_wal_lsn() and confirmed_flush_lsn (what it has not
        confirmed) and restart_lsn (what the server retains for it)."""
        tag = f"{system.replace('-', '_')}_steady"
        slot = tag
        topic_prefix = f"bench.{tag}."
        self.reset()
        self.mixed_seed()
        self.q("SELECT pg_create_logical_replication_slot(%s, %s)", (slot, self.plugin(system)))
        self.warm_topic(topic_prefix + "order")
        logf = open(os.path.join(self.work, f"{tag}.log"), "w")
        child, pid, ddir = self.start(system, tag, slot, logf)
        deadline = time.monotonic() + 180
        while not self.q1("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)):
            if time.monotonic() > deadline or (child is not None and child.poll() is not None):
                self.stop(child, ddir)
                raise RuntimeError(f"{system} did not attach to its slot, see {logf.name}")
            time.sleep(0.1)
        every = self.mixed_every()
        txn_rate = self.a.mixed_rate / MIXED_ROWS
        state = dict(t=0, error=None, done=False)

        def writer():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as w:
                    w.execute("SET synchronous_commit = off")
                    t_start = time.monotonic()
                    while True:
                        el = time.monotonic() - t_start
                        if el >= self.a.mixed_seconds:
                            break
                        target = int(el * txn_rate)
                        if target > state["t"]:
                            hi = min(target, state["t"] + 200)
                            w.execute(f"CALL bench_mixed({state['t']}, {hi}, {every})")
                            state["t"] = hi
                        else:
                            time.sleep(0.005)
                    state["secs"] = time.monotonic() - t_start
            except Exception as e:  # reported by the main thread
                state["error"] = e
            state["done"] = True

        sql = ("SELECT pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), "
               "confirmed_flush_lsn)::bigint, pg_wal_lsn_diff(pg_current_wal_lsn(), "
               "restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = %s")
        samples = []  # (t, behind confirmed_flush, behind restart_lsn, during load)
        wal0 = lsn_int(self.q1("SELECT pg_current_wal_lsn()::text"))
        cpu0 = proc_cpu(pid) or 0.0
        hwm = 0
        th = threading.Thread(target=writer, daemon=True)
        t0 = time.monotonic()
        th.start()
        try:
            while not state["done"]:
                time.sleep(0.5)
                _, conf, rest = self.q(sql, (slot,))[0]
                samples.append((time.monotonic() - t0, conf, rest, True))
                hwm = max(hwm, proc_hwm_kib(pid))
                if child is not None and child.poll() is not None:
                    raise RuntimeError(f"{system} exited during the load, see {logf.name}")
            th.join()
            if state["error"] is not None:
                raise RuntimeError(f"mixed load writer failed: {state['error']}")
            t_end = time.monotonic()
            end = lsn_int(self.q1("SELECT pg_current_wal_lsn()::text"))
            cpu_load = (proc_cpu(pid) or 0.0) - cpu0
            # After the load: until the slot confirmed everything written
            # during it, and then (after a CHECKPOINT) until restart_lsn
            # passed the load's end, or 30 s more.
            caught_up = released = None
            deadline = t_end + 30
            while time.monotonic() < deadline:
                time.sleep(0.5)
                cur, conf, rest = self.q(sql, (slot,))[0]
                samples.append((time.monotonic() - t0, conf, rest, False))
                hwm = max(hwm, proc_hwm_kib(pid))
                if caught_up is None and lsn_int(cur) - conf >= end:
                    caught_up = time.monotonic() - t_end
                    deadline = time.monotonic() + 30
                    # Logs a running-transactions record now instead of at
                    # the background writer's next one (every 15 s).
                    self.q("CHECKPOINT")
                if caught_up is not None and lsn_int(cur) - rest >= end:
                    released = time.monotonic() - t_end
                    break
        finally:
            self.stop(child, ddir)
        txns = state["t"]
        events = (txns + every - 1) // every
        delivered = self.topic_count(topic_prefix + "order")
        load = [x for x in samples if x[3]]
        res = dict(system=system, seconds=state["secs"], txns=txns, events=events,
                   rows_per_s=txns * MIXED_ROWS / state["secs"], wal_bytes=end - wal0,
                   cpu_s=cpu_load, peak_rss_mib=hwm / 1024, caught_up_s=caught_up,
                   released_s=released,
                   max_conf=max(x[1] for x in load), max_restart=max(x[2] for x in load),
                   final_conf=samples[-1][1], final_restart=samples[-1][2],
                   delivered=delivered, samples=samples)
        log(f"  {SYSTEMS[system][0]:<30} steady {res['rows_per_s']:.0f} rows/s for "
            f"{res['seconds']:.1f} s, WAL {res['wal_bytes'] / MIB:.0f} MiB: behind confirmed_flush "
            f"max {res['max_conf'] / MIB:.1f} MiB final {res['final_conf'] / 1024:.0f} KiB, "
            f"behind restart_lsn max {res['max_restart'] / MIB:.1f} MiB final "
            f"{res['final_restart'] / MIB:.1f} MiB, caught up {fmt(caught_up)} s, "
            f"restart_lsn past the load {fmt(released)} s, "
            f"cpu {cpu_load:.2f} s, rss {hwm / 1024:.1f} MiB, delivered {delivered}")
        if caught_up is None:
            # Reported, not fatal: a system that confirms only at its own
            # events (Debezium without heartbeats) never passes trailing
            # WAL without outbox rows.
            log(f"  {system}: slot did not confirm the load's WAL within 30 s after it")
        if delivered < events:
            raise RuntimeError(f"{system}: only {delivered} of {events} events in Kafka")
        return res

    def run(self):
        self.q(open(os.path.join(ROOT, "sql", "outbox.sql")).read())
        self.q(open(os.path.join(ROOT, "sql", "poller_notify.sql")).read())
        self.q(f"DROP PUBLICATION IF EXISTS {PUBLICATION}")
        self.q(f"CREATE PUBLICATION {PUBLICATION} FOR TABLE public.outbox")
        # What outbox-relay would create itself (postgres.create_publication).
        self.q(f"DROP PUBLICATION IF EXISTS {RELAY_PUBLICATION}")
        self.q(f"CREATE PUBLICATION {RELAY_PUBLICATION} FOR TABLE public.outbox "
               "WITH (publish = 'insert')")
        have_poller = os.path.exists(os.path.join(self.a.bin, "outbox-poller"))
        self.systems = [s for s in self.a.systems if have_poller or not s.startswith("poller")]
        if len(self.systems) < len(self.a.systems):
            log("outbox-poller not built: skipping the poller")
        # Every CDC run of a scenario has its own slot, all made before the
        # backlog (bench/run.sh raises the limit from the run count).
        slots = self.cdc_count() * self.a.runs
        if slots > int(self.q1("SHOW max_replication_slots")):
            raise RuntimeError(f"{slots} slots needed, max_replication_slots is "
                               f"{self.q1('SHOW max_replication_slots')}")
        self.writes = {}
        self.steady_results = []
        if any(eos_settings(s) for s in self.systems):
            # The relay reads it at start; made now, so no drain waits for
            # its auto-creation (a record with another key is ignored).
            self.warm_topic(CHECKPOINT_TOPIC)
        if "backlog" in self.a.scenarios:
            for shape in self.a.per_txn:
                log(f"backlog: {shape} event(s) per transaction, {self.a.events} events")
                self.drain_all(shape, self.a.events, lambda: None,
                               lambda shape=shape: self.write_backlog(shape))
        if "mixed" in self.a.scenarios:
            self.mixed_setup()
            every = self.mixed_every()
            ntx = (self.a.mixed_events - 1) * every + 1
            log(f"mixed: {self.a.mixed_events} outbox events in {ntx * MIXED_ROWS} rows "
                f"({ntx} transactions)")
            self.drain_all("mixed", self.a.mixed_events, self.mixed_seed, self.write_mixed)
            for s in self.systems:
                if SYSTEMS[s][1] == "cdc":
                    log(f"mixed, steady: {self.a.mixed_rate} rows/s for {self.a.mixed_seconds} s")
                    self.steady_results.append(self.steady(s))
        if "large" in self.a.scenarios:
            n = self.a.large_events * self.a.large_txns
            log(f"large: {self.a.large_txns} transaction(s) of {self.a.large_events} events")
            self.drain_all("large", n, lambda: None,
                           lambda: self.write_backlog(self.a.large_events, n))
        self.reset()


# --- report ----------------------------------------------------------------

def med(rows, key):
    vals = [r[key] for r in rows if r[key] is not None]
    return statistics.median(vals) if vals else None


def summarize(results):
    out = {}
    for r in results:
        out.setdefault((r["shape"], r["system"]), []).append(r)
    return {k: dict(seconds=med(v, "seconds"), rate=med(v, "rate"),
                    cpu_us=med(v, "cpu_us_per_event"),
                    rss=max(x["peak_rss_mib"] for x in v),
                    pg_cpu_us=med(v, "pg_cpu_s") * 1e6 / v[0]["events"],
                    kafka_cpu_us=med(v, "kafka_cpu_s") * 1e6 / v[0]["events"],
                    wal=med(v, "drain_wal_bytes_per_event"),
                    startup=med(v, "startup_s"), cpu_s=med(v, "cpu_s"),
                    pg_cpu_s=med(v, "pg_cpu_s"), kafka_cpu_s=med(v, "kafka_cpu_s"),
                    spill=med(v, "spill_bytes"), events=v[0]["events"],
                    kafka_txns=med(v, "kafka_txns"),
                    rate_min=min(x["rate"] for x in v), rate_max=max(x["rate"] for x in v),
                    delivered=min((x["delivered"] for x in v if x["delivered"] is not None),
                                  default=None), runs=len(v))
            for k, v in out.items()}


def fmt(v, f="{:.2f}"):
    return "–" if v is None else f.format(v)


TARGETS = ("recv", "poller-tuned", "poller", "debezium", "cpu-debezium", "rss-debezium",
           "cpu", "rss")


def targets(summary, shapes, labels, which=TARGETS, title="Issue 5 drain targets for outbox-relay"):
    """The issue 5 target table: one column per shape."""
    L = [f"### {title}", "",
         "| target | " + " | ".join(labels) + " |",
         "| --- | " + " | ".join("---" for _ in shapes) + " |"]

    def row(key, name, fn):
        if key not in which:
            return
        cells = []
        for sh in shapes:
            try:
                val, ok = fn(sh)
                cells.append(f"{val} {'met' if ok else '**missed**'}")
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("not measured")
        L.append(f"| {name} | " + " | ".join(cells) + " |")

    S = lambda sh, s: summary[(sh, s)]
    row("recv", "drain rate ≥ 0.8 × pg_recvlogical (wal2json)",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'recv-wal2json')['rate']:.2f}×",
                    S(sh, 'relay')['rate'] >= 0.8 * S(sh, 'recv-wal2json')['rate']))
    row("poller-tuned", "drain rate ≥ 3 × outbox-poller (tuned)",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'poller-tuned')['rate']:.1f}×",
                    S(sh, 'relay')['rate'] >= 3 * S(sh, 'poller-tuned')['rate']))
    row("poller", "drain rate ≥ 3 × outbox-poller (default)",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'poller')['rate']:.1f}×",
                    S(sh, 'relay')['rate'] >= 3 * S(sh, 'poller')['rate']))
    row("debezium", "drain rate ≥ 2 × Debezium",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'debezium')['rate']:.1f}×",
                    S(sh, 'relay')['rate'] >= 2 * S(sh, 'debezium')['rate']))
    row("cpu-debezium", "CPU per event ≤ Debezium / 10",
        lambda sh: (f"{S(sh, 'debezium')['cpu_us'] / S(sh, 'relay')['cpu_us']:.1f}× less",
                    S(sh, 'debezium')['cpu_us'] >= 10 * S(sh, 'relay')['cpu_us']))
    row("rss-debezium", "peak RSS ≤ Debezium / 10",
        lambda sh: (f"{S(sh, 'debezium')['rss'] / S(sh, 'relay')['rss']:.1f}× smaller",
                    S(sh, 'debezium')['rss'] >= 10 * S(sh, 'relay')['rss']))
    row("cpu", "CPU ≤ 2 µs/event",
        lambda sh: (f"{S(sh, 'relay')['cpu_us']:.2f} µs", S(sh, 'relay')['cpu_us'] <= 2))
    row("rss", "peak RSS ≤ 32 MiB",
        lambda sh: (f"{S(sh, 'relay')['rss']:.1f} MiB", S(sh, 'relay')['rss'] <= 32))
    return L


def report(args, bench, summary, plots):
    shapes = args.per_txn
    systems = [s for s in SYSTEMS if any((sh, s) in summary for sh in shapes)]
    L = []
    L.append(BEGIN_MARK)
    L.append("## Suite: every relay side by side (bench/run.sh)")
    L.append("")
    L.append("Command: `" + " ".join(["bench/run.sh"] + args.argv) + "`, "
             f"run on {datetime.date.today().isoformat()}: {args.events} events per "
             f"backlog, ~350-byte jsonb payloads, {args.runs} run(s) per system "
             f"(medians below), one PostgreSQL 15 (durable defaults; the backlog "
             f"writer alone uses synchronous_commit=off) and one Kafka 3.9 broker, "
             f"on {os.cpu_count()} cores shared by everything. Release build.")
    L.append("")
    L.append("Drain time runs from the system's start (process launch, so JVM and "
             "connector start-up count for Debezium) until every event was "
             "acknowledged by Kafka: for the CDC relays, until the slot's "
             "confirmed_flush_lsn passed the backlog's last commit; for the "
             "poller, until no row was unsent; pg_recvlogical decodes to "
             "/dev/null and exits at the backlog's end (the walsender's ceiling). "
             "CPU is utime+stime of the system's process (the whole JVM for "
             "Debezium); PostgreSQL CPU is the whole server over the drain; "
             "WAL/event during the drain is what the system made PostgreSQL "
             "write (the poller's mark-sent UPDATE).")
    L.append("")
    L.append("Configurations: outbox-relay and outbox-poller with their defaults "
             "(producer linger.ms=20; the relay's in-flight window of 10000 events / "
             "4 MiB, which bounds its RSS); outbox-relay (pgoutput) is the same relay "
             "with postgres.plugin=pgoutput, streaming the publication "
             f"{RELAY_PUBLICATION} (publish = 'insert', as the relay creates it), "
             "where pg_recvlogical pgoutput and Debezium read "
             f"{PUBLICATION}; the tuned poller adds poller.batch_size="
             f"{args.poller_batch}, poller.interval_ms={args.poller_interval} and "
             "poller.notify=true. Debezium 3.2.3 with Kafka Connect 3.9.1 standalone "
             "(bench/debezium.sh): connector and worker defaults (max.batch.size 2048, "
             "poll.interval.ms 500, producer linger.ms 0, acks=all), except "
             "offset.flush.interval.ms=1000, so its slot trails Kafka by up to a "
             "second. Each system writes to its own topics, created before its run; "
             "'in Kafka' counts what arrived. With one run per system the numbers "
             "carry the noise of a shared 2-core machine: use --runs 3 (or --full) "
             "for medians.")
    L.append("")
    for sh in shapes:
        if sh in bench.writes:
            secs, wal = bench.writes[sh]
            L.append(f"### {sh} event(s) per transaction")
            L.append("")
            L.append(f"Writing the backlog took {secs:.1f} s and made "
                     f"{wal / 1048576:.0f} MiB of WAL, {wal / args.events:.0f} bytes per event.")
            L.append("")
        L.append("| system | drain s | events/s | vs pg_recvlogical wal2json | CPU µs/event "
                 "| peak RSS MiB | PostgreSQL CPU µs/event | Kafka CPU µs/event "
                 "| WAL bytes/event during drain | start-up s (slot active) |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        ceil = summary.get((sh, "recv-wal2json"))
        for s in systems:
            v = summary.get((sh, s))
            if not v:
                continue
            ratio = fmt(v["rate"] / ceil["rate"]) if ceil else "–"
            L.append(f"| {SYSTEMS[s][0]} | {v['seconds']:.2f} | {v['rate']:,.0f} | {ratio} "
                     f"| {v['cpu_us']:.2f} | {v['rss']:.1f} | {v['pg_cpu_us']:.2f} "
                     f"| {v['kafka_cpu_us']:.2f} | {v['wal']:.0f} | {fmt(v['startup'])} |")
        L.append("")
    L += targets(summary, shapes, [f"{sh}/txn" for sh in shapes])
    L.append("")
    if plots:
        L.append("Plots: " + ", ".join(f"[{os.path.basename(p)}](plots/{os.path.basename(p)})"
                                      for p in plots) + ".")
        L.append("")
    L.append("<details><summary>every run</summary>")
    L.append("")
    L.append("| events/txn | system | run | s | events/s | CPU s | peak RSS MiB | PG CPU s | Kafka CPU s | in Kafka |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in bench.results:
        if r["shape"] not in shapes:
            continue
        L.append(f"| {r['shape']} | {SYSTEMS[r['system']][0]} | {r['run']} | {r['seconds']:.2f} "
                 f"| {r['rate']:,.0f} | {r['cpu_s']:.2f} | {r['peak_rss_mib']:.1f} "
                 f"| {r['pg_cpu_s']:.1f} | {r['kafka_cpu_s']:.1f} "
                 f"| {'–' if r['delivered'] is None else r['delivered']} |")
    L.append("")
    L.append("</details>")
    L.append(END_MARK)
    return "\n".join(L) + "\n"


def header(args, what):
    return ("Command: `" + " ".join(["bench/run.sh"] + args.argv) + "`, "
            f"run on {datetime.date.today().isoformat()}: {what}, {args.runs} run(s) per "
            "system (medians below), one PostgreSQL 15 (durable defaults; the writer "
            "alone uses synchronous_commit=off) and one Kafka 3.9 broker, on "
            f"{os.cpu_count()} cores shared by everything. Release build; systems "
            "configured as in the suite above.")


def drain_rows(summary, shape, extra):
    """Drain table rows for one shape: (header cells, rows)."""
    ceil = summary.get((shape, "recv-wal2json"))
    rows = []
    for s in SYSTEMS:
        v = summary.get((shape, s))
        if not v:
            continue
        ratio = fmt(v["rate"] / ceil["rate"]) if ceil else "–"
        rows.append([SYSTEMS[s][0], f"{v['seconds']:.2f}", f"{v['rate']:,.0f}", ratio]
                    + extra(v))
    return rows


def table(head, rows):
    return (["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
            + ["| " + " | ".join(r) + " |" for r in rows])


def report_mixed(args, bench, summary, plots):
    every = round(1 / (args.mixed_share * MIXED_ROWS))
    begin, end = MARKS["mixed"]
    L = [begin, f"## Mixed WAL: outbox rows are {args.mixed_share:.0%} of the WAL "
         "(bench/run.sh --scenarios mixed)", ""]
    rows = ((args.mixed_events - 1) * every + 1) * MIXED_ROWS
    L.append(header(args, f"{args.mixed_events} outbox events in a backlog of {rows} rows"))
    L.append("")
    L.append(f"Workload: each transaction writes {MIXED_ROWS} rows: 7 INSERTs, 2 UPDATEs "
             "(of rows written 5 transactions earlier) and 1 DELETE on a business table, "
             "`bench_orders`, whose rows carry a jsonb payload of the outbox rows' size "
             "(an UPDATE logs the whole new row under wal_level=logical, a DELETE the key). "
             f"In every {every}th transaction an outbox INSERT replaces the second UPDATE: "
             f"{args.mixed_share:.0%} of the rows and {1 / every:.0%} of the transactions "
             "carry an outbox event. wal2json (add-tables=public.outbox) and pgoutput (a "
             "publication of the outbox alone) send only the outbox rows, but the "
             "walsender decodes the whole WAL. The poller reads only the outbox table. "
             "Drain time and CPU are measured as in the suite above.")
    L.append("")
    if "mixed" in bench.writes:
        secs, wal = bench.writes["mixed"]
        L.append("### Drain")
        L.append("")
        L.append(f"Writing the backlog took {secs:.1f} s and made {wal / MIB:.0f} MiB of WAL: "
                 f"{wal / rows:.0f} bytes per row, "
                 f"{wal / args.mixed_events / 1024:.1f} KiB per outbox event.")
        L.append("")
        mib = wal / MIB
        L += table(["system", "drain s", "outbox events/s", "vs pg_recvlogical wal2json",
                    "WAL MiB/s", "CPU µs/outbox event", "CPU ms/WAL MiB", "peak RSS MiB",
                    "PostgreSQL CPU s", "Kafka CPU s", "in Kafka"],
                   drain_rows(summary, "mixed", lambda v: [
                       f"{mib / v['seconds']:.1f}", f"{v['cpu_us']:.1f}",
                       f"{v['cpu_s'] * 1000 / mib:.2f}", f"{v['rss']:.1f}",
                       f"{v['pg_cpu_s']:.1f}", f"{v['kafka_cpu_s']:.1f}",
                       "–" if v["delivered"] is None else str(v["delivered"])]))
        L.append("")
    if bench.steady_results:
        L.append("### Steady mixed load: WAL held by the slot")
        L.append("")
        L.append(f"The mixed load written at {args.mixed_rate} rows/s "
                 f"({args.mixed_rate / MIXED_ROWS / every:.0f} outbox events/s) for "
                 f"{args.mixed_seconds:g} s while the system runs from a fresh slot; every 0.5 s "
                 "the harness samples pg_replication_slots. *Behind confirmed* is "
                 "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn): WAL the "
                 "system has not confirmed. *Behind restart* is pg_current_wal_lsn() − "
                 "restart_lsn: the WAL the server keeps for the slot. PostgreSQL moves "
                 "restart_lsn only to a running-transactions record that the slot has "
                 "decoded and confirmed past (one is logged about every 15 s, and at "
                 "checkpoints), so it trails by up to ~15 s of WAL however quickly the system "
                 "confirms. After the load the harness waits until the slot confirmed "
                 "everything written during it (*caught up*, seconds after the load's end) "
                 "and then, after a CHECKPOINT (which logs a running-transactions record "
                 "at once), until restart_lsn passed the load's end (*WAL released*, seconds "
                 "after the load's end: from then on the server can recycle all of the "
                 "load's WAL), at most 30 s; "
                 "*final* is the last sample. CPU is the system's over the load.")
        L.append("")
        rows = []
        for r in bench.steady_results:
            wal_rate = r["wal_bytes"] / r["seconds"]
            rows.append([SYSTEMS[r["system"]][0], f"{r['rows_per_s']:,.0f}",
                         f"{wal_rate / MIB:.1f}",
                         f"{r['max_conf'] / MIB:.1f} ({r['max_conf'] / wal_rate:.1f} s)",
                         f"{r['final_conf'] / 1024:.0f}",
                         f"{r['max_restart'] / MIB:.1f} ({r['max_restart'] / wal_rate:.1f} s)",
                         f"{r['final_restart'] / MIB:.1f}",
                         fmt(r["caught_up_s"]) if r["caught_up_s"] is not None else "not in 30 s",
                         fmt(r["released_s"], "{:.1f}"),
                         f"{r['cpu_s'] * 100 / r['seconds']:.0f}",
                         f"{r['cpu_s'] * 1000 / (r['wal_bytes'] / MIB):.2f}",
                         f"{r['peak_rss_mib']:.1f}", f"{r['delivered']} of {r['events']}"])
        L += table(["system", "rows/s written", "WAL MiB/s",
                    "max behind confirmed MiB (s of WAL)", "final behind confirmed KiB",
                    "max behind restart MiB (s of WAL)", "final behind restart MiB",
                    "caught up s", "WAL released s", "CPU % of a core", "CPU ms/WAL MiB",
                    "peak RSS MiB",
                    "in Kafka"], rows)
        L.append("")
    relay_steady = [r for r in bench.steady_results if r["system"] == "relay"]
    L += targets(summary, ["mixed"], ["mixed WAL"],
                 which=("recv", "poller-tuned", "poller", "debezium", "rss-debezium", "rss"),
                 title="Issue 5 targets for outbox-relay on the mixed WAL")
    if relay_steady:
        r = relay_steady[0]
        wal_rate = r["wal_bytes"] / r["seconds"]
        ok1 = r["max_conf"] <= 2 * wal_rate
        ok2 = r["final_conf"] <= MIB
        L.append(f"| steady load: slot ≤ 2 s of WAL behind pg_current_wal_lsn | "
                 f"{r['max_conf'] / wal_rate:.1f} s {'met' if ok1 else '**missed**'} |")
        L.append(f"| after the load: slot ≤ 1 MiB behind | {r['final_conf'] / 1024:.0f} KiB "
                 f"{'met' if ok2 else '**missed**'} |")
        L.append("| after the load: restart_lsn passes the load's end (WAL released) | "
                 + (f"after {r['released_s']:.1f} s met |" if r["released_s"] is not None
                    else "not within 30 s **missed** |"))
    L.append("")
    if plots:
        L.append("Plot: " + ", ".join(f"[{os.path.basename(p)}](plots/{os.path.basename(p)})"
                                     for p in plots) + ".")
        L.append("")
    L.append(end)
    return "\n".join(L) + "\n"


def pgoutput_columns(args):
    """(shape key, column label) of every scenario this run measured."""
    cols = []
    if "backlog" in args.scenarios:
        cols += [(sh, f"{sh}/txn") for sh in args.per_txn]
    if "mixed" in args.scenarios:
        cols.append(("mixed", "mixed WAL"))
    if "large" in args.scenarios:
        cols.append(("large", f"{args.large_txns} × {args.large_events}/txn"))
    return cols


def report_pgoutput(args, summary):
    """Issue 12's targets for outbox-relay with pgoutput, from the medians
    of this run, one column per scenario and shape."""
    begin, end = MARKS["pgoutput"]
    cols = [(k, label) for k, label in pgoutput_columns(args)
            if (k, "relay-pgoutput") in summary]
    L = [begin, "## outbox-relay with pgoutput: issue 12's targets (bench/run.sh)", ""]
    L.append("Command: `" + " ".join(["bench/run.sh"] + args.argv) + "`, run on "
             f"{datetime.date.today().isoformat()}, "
             + (f"medians of {args.runs} runs per system" if args.runs > 1 else
                "one run per system, so no medians: use --runs 3")
             + ", on the drains of the suite (same servers, same backlogs, same "
             "configurations). *outbox-relay (pgoutput)* is outbox-relay with postgres.plugin=pgoutput "
             f"streaming the publication {RELAY_PUBLICATION} (FOR TABLE public.outbox WITH "
             "(publish = 'insert'), what the relay creates itself), proto_version 1, "
             "otherwise configured as *outbox-relay* (wal2json). *pg_recvlogical pgoutput* "
             f"decodes the same WAL with the same plugin (proto_version 1, publication "
             f"{PUBLICATION}) to /dev/null: the walsender's ceiling. Every system drains its "
             "own slot, made before the backlog was written. On the mixed WAL, rates and "
             "costs per event count outbox events (1% of the rows).")
    L.append("")
    if not cols:
        L += ["outbox-relay (pgoutput) was not measured in this run.", "", end]
        return "\n".join(L) + "\n"
    keys = [k for k, _ in cols]
    S = lambda k, s: summary[(k, s)]
    P = "relay-pgoutput"

    def row(name, applies, fn):
        cells = []
        for k in keys:
            try:
                val, ok = fn(k)
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("not measured")
                continue
            if applies(k):
                cells.append(f"{val} {'met' if ok else '**missed**'}")
            else:
                cells.append(f"{val} (no target)")
        return "| " + name + " | " + " | ".join(cells) + " |"

    every = lambda k: True
    rate = lambda k, s: S(k, s)["rate"]
    L += table(["target"] + [label for _, label in cols], [])
    L.append(row("drain ≥ 0.9 × pg_recvlogical (pgoutput)", every,
                 lambda k: (f"{rate(k, P) / rate(k, 'recv-pgoutput'):.2f}×",
                            rate(k, P) >= 0.9 * rate(k, "recv-pgoutput"))))
    L.append(row("drain ≥ 1.3 × outbox-relay (wal2json) at 10/txn", lambda k: k == 10,
                 lambda k: (f"{rate(k, P) / rate(k, 'relay'):.2f}×",
                            rate(k, P) >= 1.3 * rate(k, "relay"))))
    L.append(row("drain ≥ 1.8 × outbox-relay (wal2json) on the mixed WAL",
                 lambda k: k == "mixed",
                 lambda k: (f"{rate(k, P) / rate(k, 'relay'):.2f}×",
                            rate(k, P) >= 1.8 * rate(k, "relay"))))
    L.append(row("relay CPU ≤ 2 µs/event at 10/txn", lambda k: k == 10,
                 lambda k: (f"{S(k, P)['cpu_us']:.2f} µs", S(k, P)["cpu_us"] <= 2)))
    L.append(row("peak RSS ≤ 32 MiB", every,
                 lambda k: (f"{S(k, P)['rss']:.1f} MiB", S(k, P)["rss"] <= 32)))
    L.append("")
    L.append("The medians these come from (– where a system was not run):")
    L.append("")
    get = lambda k, s, key, f: fmt(summary[(k, s)][key], f) if (k, s) in summary else "–"
    rows = []
    for label, s, key, f in [
            ("events/s, outbox-relay (pgoutput)", P, "rate", "{:,.0f}"),
            ("events/s, outbox-relay (wal2json)", "relay", "rate", "{:,.0f}"),
            ("events/s, pg_recvlogical pgoutput", "recv-pgoutput", "rate", "{:,.0f}"),
            ("events/s, pg_recvlogical wal2json", "recv-wal2json", "rate", "{:,.0f}"),
            ("relay CPU µs/event, pgoutput", P, "cpu_us", "{:.2f}"),
            ("relay CPU µs/event, wal2json", "relay", "cpu_us", "{:.2f}"),
            ("peak RSS MiB, pgoutput (max of the runs)", P, "rss", "{:.1f}"),
            ("peak RSS MiB, wal2json (max of the runs)", "relay", "rss", "{:.1f}"),
            ("PostgreSQL CPU µs/event, outbox-relay (pgoutput)", P, "pg_cpu_us", "{:.2f}"),
            ("PostgreSQL CPU µs/event, pg_recvlogical pgoutput", "recv-pgoutput",
             "pg_cpu_us", "{:.2f}"),
            ("PostgreSQL CPU µs/event, outbox-relay (wal2json)", "relay", "pg_cpu_us",
             "{:.2f}"),
            ("Kafka CPU µs/event, outbox-relay (pgoutput)", P, "kafka_cpu_us", "{:.2f}")]:
        rows.append([label] + [get(k, s, key, f) for k in keys])
    L += table(["median"] + [label for _, label in cols], rows)
    L.append("")
    L.append("PostgreSQL CPU is the whole server over the drain, mostly the walsender "
             "decoding; `bench/drain.sh --stages` splits the relay's own CPU into "
             "receive, decode, route and produce for each plugin.")
    L.append("")
    L.append(end)
    return "\n".join(L) + "\n"


def report_eos(args, bench, summary):
    """Exactly-once against at-least-once on the drains of this run: medians,
    spread and ratio per scenario, and every run in the order it ran."""
    begin, end = MARKS["eos"]
    eos = [s for s in args.systems if eos_settings(s)]
    systems = ["relay"] + eos
    cols = [(k, label) for k, label in pgoutput_columns(args)
            if any((k, s) in summary for s in systems)]
    L = [begin, "## Exactly-once against at-least-once: backlog drain (bench/run.sh)", ""]
    L.append(header(args, f"{args.events} events per backlog"))
    L.append("")
    L.append("*outbox-relay* is the default at-least-once relay (wal2json); *exactly-once* is "
             "the same with `kafka.exactly_once=true` (a Kafka transaction per batch of whole "
             "PostgreSQL transactions, committed at the first PostgreSQL commit after "
             "`kafka.transaction.max_ms`, 100 by default, or `max_events`, 10000, with a "
             "checkpoint record; the slot confirmed only after the commit). Both drain "
             "copies of one WAL, each from its own slot made before the backlog, one at a "
             "time; the order of the systems rotates every run (with two systems: "
             "alternates), so machine noise hits both modes alike. The clock stops when the "
             "slot's confirmed_flush_lsn passes the backlog's last commit: for exactly-once, "
             "when the Kafka transaction holding it committed. *In Kafka* counts what a "
             "read_committed consumer reads (kcat) for exactly-once, end offsets for "
             "at-least-once; *Kafka txns* counts the checkpoint records committed during "
             "the drain. The events/s column gives the median and, in brackets, the "
             "slowest and fastest run.")
    L.append("")
    loads = [r["loadavg"] for r in bench.results if r.get("loadavg") is not None]
    if loads:
        L.append(f"The machine was shared with other work: its 1-minute load average at the "
                 f"start of each drain (2 cores; this benchmark's own servers included) was "
                 f"{min(loads):.1f} to {max(loads):.1f}, median {statistics.median(loads):.1f}.")
        L.append("")
    if not cols or "relay" not in args.systems or not eos:
        L += ["Needs relay and relay-eos among --systems.", "", end]
        return "\n".join(L) + "\n"
    rows = []
    for k, label in cols:
        base = summary.get((k, "relay"))
        for s in systems:
            v = summary.get((k, s))
            if not v:
                continue
            rows.append([
                label, SYSTEMS[s][0], f"{v['seconds']:.2f}",
                f"{v['rate']:,.0f} ({v['rate_min']:,.0f}–{v['rate_max']:,.0f})",
                fmt(v["rate"] / base["rate"]) if base else "–",
                f"{v['cpu_us']:.2f}", f"{v['rss']:.1f}", f"{v['pg_cpu_us']:.2f}",
                f"{v['kafka_cpu_us']:.2f}",
                fmt(v["kafka_txns"], "{:.0f}"),
                fmt(v["events"] / v["kafka_txns"] if v["kafka_txns"] else None, "{:,.0f}"),
                "–" if v["delivered"] is None else str(v["delivered"])])
    L += table(["backlog", "system", "drain s", "events/s (min–max)", "× at-least-once",
                "CPU µs/event", "peak RSS MiB", "PostgreSQL CPU µs/event",
                "Kafka CPU µs/event", "Kafka txns", "events/Kafka txn", "in Kafka"], rows)
    L.append("")
    L.append("<details><summary>every run, in the order run</summary>")
    L.append("")
    labels = dict(cols)
    runs = sorted((r for r in bench.results if r["system"] in systems and r["shape"] in labels),
                  key=lambda r: (list(labels).index(r["shape"]), r["run"], r.get("position", 0)))
    L += table(["backlog", "run", "order", "system", "s", "events/s", "CPU s", "PG CPU s",
                "Kafka CPU s", "Kafka txns", "in Kafka", "load avg"],
               [[labels[r["shape"]], str(r["run"]), str(r.get("position", "–")),
                 SYSTEMS[r["system"]][0], f"{r['seconds']:.2f}", f"{r['rate']:,.0f}",
                 f"{r['cpu_s']:.2f}", f"{r['pg_cpu_s']:.1f}", f"{r['kafka_cpu_s']:.1f}",
                 fmt(r.get("kafka_txns"), "{}"), fmt(r["delivered"], "{}"),
                 fmt(r.get("loadavg"), "{:.1f}")] for r in runs])
    L.append("")
    L.append("</details>")
    L.append("")
    L.append(end)
    return "\n".join(L) + "\n"


def report_large(args, bench, summary):
    begin, end = MARKS["large"]
    n = args.large_events * args.large_txns
    L = [begin, "## Large transactions (bench/run.sh --scenarios large)", ""]
    L.append(header(args, f"a backlog of {args.large_txns} transaction(s) of "
                    f"{args.large_events} events each"))
    L.append("")
    L.append("Nothing in such a transaction can be confirmed before its COMMIT. The "
             "server's reorder buffer collects it (in memory up to "
             "logical_decoding_work_mem, 64 MB, the rest spilled to disk: *server spill*, "
             "from pg_stat_replication_slots) and sends it only once decoded to its "
             "COMMIT; outbox-relay then produces its events as they arrive, and its "
             "in-flight limits (limits.max_inflight_events 10000, max_inflight_bytes "
             "4 MiB by default) bound its memory although it confirms nothing until the "
             "transaction's last event is acknowledged. Drain time and CPU as in the suite above.")
    L.append("")
    if "large" in bench.writes:
        secs, wal = bench.writes["large"]
        L.append(f"Writing the backlog took {secs:.1f} s and made {wal / MIB:.0f} MiB of WAL, "
                 f"{wal / n:.0f} bytes per event.")
        L.append("")
    L += table(["system", "drain s", "events/s", "vs pg_recvlogical wal2json",
                "CPU µs/event", "peak RSS MiB", "PostgreSQL CPU µs/event",
                "Kafka CPU µs/event", "server spill MiB", "in Kafka"],
               drain_rows(summary, "large", lambda v: [
                   f"{v['cpu_us']:.2f}", f"{v['rss']:.1f}", f"{v['pg_cpu_us']:.2f}",
                   f"{v['kafka_cpu_us']:.2f}",
                   "–" if v["spill"] is None else f"{v['spill'] / MIB:.0f}",
                   "–" if v["delivered"] is None else str(v["delivered"])]))
    L.append("")
    L += targets(summary, ["large"], [f"{args.large_txns} × {args.large_events}/txn"],
                 title="Issue 5 drain targets for outbox-relay on large transactions")
    L.append("")
    L.append(end)
    return "\n".join(L) + "\n"


def plot_retention(bench, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing (pip install matplotlib): no plots")
        return []
    os.makedirs(outdir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for r in bench.steady_results:
        ts = [x[0] for x in r["samples"]]
        label = SYSTEMS[r["system"]][0]
        line = ax.plot(ts, [x[1] / MIB for x in r["samples"]],
                       label=f"{label}: behind confirmed_flush_lsn")[0]
        ax.plot(ts, [x[2] / MIB for x in r["samples"]], linestyle="--",
                color=line.get_color(), label=f"{label}: behind restart_lsn")
        ax.axvline(r["seconds"], color="grey", linewidth=0.8)
    ax.set_xlabel("seconds (grey line: the load stops)")
    ax.set_ylabel("WAL MiB")
    ax.set_title("WAL behind pg_current_wal_lsn() under the steady mixed load")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = os.path.join(outdir, "mixed_retention.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return [p]


def write_results(path, section, marks=(BEGIN_MARK, END_MARK)):
    begin, end = marks
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def make_plots(args, summary, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing (pip install matplotlib): no plots")
        return []
    os.makedirs(outdir, exist_ok=True)
    systems = [s for s in SYSTEMS if any((sh, s) in summary for sh in args.per_txn)]
    files = []
    for key, title, fname, logy in [
            ("rate", "Backlog drain rate (events/s, higher is better)", "drain_rate.png", False),
            ("cpu_us", "Relay CPU per event (µs, lower is better)", "drain_cpu.png", True),
            ("rss", "Peak RSS (MiB, lower is better)", "drain_rss.png", True)]:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.8 / max(len(args.per_txn), 1)
        for i, sh in enumerate(args.per_txn):
            xs, ys = [], []
            for j, s in enumerate(systems):
                v = summary.get((sh, s))
                if v and v[key]:
                    xs.append(j + i * width)
                    ys.append(v[key])
            bars = ax.bar(xs, ys, width, label=f"{sh} event(s)/txn")
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks([j + width * (len(args.per_txn) - 1) / 2 for j in range(len(systems))])
        ax.set_xticklabels([SYSTEMS[s][0].replace(" (", "\n(") for s in systems], fontsize=8)
        if logy:
            ax.set_yscale("log")
        ax.set_title(f"{title}, {args.events} events")
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = os.path.join(outdir, fname)
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    return files


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help="backlog (N events, K per transaction), mixed (outbox rows "
                   "are 1%% of the WAL: drain and steady load), large (100k-event "
                   "transactions)")
    p.add_argument("--events", type=int, default=200000, help="backlog: events per backlog")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--per-txn", default="10,1", help="backlog: events per transaction")
    p.add_argument("--mixed-events", type=int, default=10000,
                   help="mixed: outbox events in the backlog")
    p.add_argument("--mixed-share", type=float, default=0.01,
                   help="mixed: outbox rows' share of the rows")
    p.add_argument("--mixed-rate", type=int, default=10000,
                   help="mixed, steady load: rows written per second")
    p.add_argument("--mixed-seconds", type=float, default=20,
                   help="mixed, steady load: seconds")
    p.add_argument("--large-events", type=int, default=100000,
                   help="large: events per transaction")
    p.add_argument("--large-txns", type=int, default=1, help="large: transactions")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--plots", default=os.path.join(ROOT, "bench", "plots"))
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--poller-batch", type=int, default=5000)
    p.add_argument("--poller-interval", type=int, default=50)
    p.add_argument("--sections", default=",".join(MARKS),
                   help="which sections of --results to write (of those the run "
                   "measured): backlog, mixed, large, pgoutput, eos (with relay-eos "
                   "among the systems; also bench/latency.py's), latency (bench/latency.py's "
                   "only); the others are kept")
    p.add_argument("--argv", default="")
    args = p.parse_args()
    args.per_txn = [int(x) for x in args.per_txn.split(",")]
    args.systems = args.systems.split(",")
    args.scenarios = args.scenarios.split(",")
    args.argv = args.argv.split()
    args.sections = args.sections.split(",")
    register_eos(args.systems, SYSTEMS, "cdc")
    for s in args.sections:
        if s not in MARKS and s not in LATENCY_SECTIONS:
            sys.exit(f"unknown section {s}; known: {', '.join(list(MARKS) + list(LATENCY_SECTIONS))}")
    for s in args.systems:
        if s not in SYSTEMS:
            sys.exit(f"unknown system {s}; known: {', '.join(SYSTEMS)}")
    for s in args.scenarios:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s}; known: {', '.join(SCENARIOS)}")
    if not 0 < args.mixed_share <= 1 / MIXED_ROWS:
        sys.exit(f"--mixed-share must be in (0, {1 / MIXED_ROWS}]")
    bench = Bench(args)
    bench.run()
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(dict(drains=bench.results, steady=bench.steady_results), f, indent=1)
    summary = summarize(bench.results)
    written = []
    want = lambda section: section in args.sections
    if "backlog" in args.scenarios and want("backlog"):
        plots = make_plots(args, summary, args.plots)
        write_results(args.results, report(args, bench, summary, plots))
        written += plots
    if "mixed" in args.scenarios and want("mixed"):
        plots = plot_retention(bench, args.plots) if bench.steady_results else []
        write_results(args.results, report_mixed(args, bench, summary, plots), MARKS["mixed"])
        written += plots
    if "large" in args.scenarios and want("large"):
        write_results(args.results, report_large(args, bench, summary), MARKS["large"])
    if "relay-pgoutput" in args.systems and want("pgoutput"):
        write_results(args.results, report_pgoutput(args, summary), MARKS["pgoutput"])
    if any(eos_settings(s) for s in args.systems) and want("eos"):
        write_results(args.results, report_eos(args, bench, summary), MARKS["eos"])
    log(f"wrote {args.results}" + (f" and {len(written)} plots in {args.plots}" if written else ""))


if __name__ == "__main__":
    main()
