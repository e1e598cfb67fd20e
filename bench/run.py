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

The CDC systems drain copies of one WAL: all their slots exist before the
backlog is written. The poller needs unsent rows, so each poller run gets the
backlog written again into the emptied table. Results go to a section of
bench/RESULTS.md between markers (everything else in the file is kept) and
PNG plots under bench/plots/.
"""

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import psycopg

CLK_TCK = os.sysconf("SC_CLK_TCK")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
BEGIN_MARK = "<!-- bench/run.sh: begin -->"
END_MARK = "<!-- bench/run.sh: end -->"
WAL2JSON_OPTS = ["format-version=2", "include-transaction=true",
                 "include-lsn=true", "include-xids=true",
                 "include-timestamp=true", "add-tables=public.outbox",
                 "actions=insert"]

# name -> (label, kind)
SYSTEMS = {
    "relay": ("outbox-relay", "cdc"),
    "debezium": ("Debezium 3.2 (Kafka Connect)", "cdc"),
    "recv-wal2json": ("pg_recvlogical wal2json", "recv"),
    "recv-pgoutput": ("pg_recvlogical pgoutput", "recv"),
    "poller": ("outbox-poller (default)", "poll"),
    "poller-tuned": ("outbox-poller (tuned)", "poll"),
}


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
        return total - 1

    def write_backlog(self, per_txn):
        """Writes N events, per_txn per transaction. Returns (seconds, WAL
        bytes, LSN of the last backlog transaction's COMMIT record)."""
        n = self.a.events
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
        secs = time.monotonic() - t0
        self.q("CHECKPOINT")  # flush WAL so pg_waldump reads the tail
        last_commit = self.last_commit_before(end)
        # A sentinel transaction after the backlog: Debezium confirms a
        # transaction's end only when a later event's offset is committed.
        self.q("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
               "VALUES (gen_random_uuid(), 'sentinel', 's', 'Sentinel', '{}')")
        return secs, end - before, last_commit

    def last_commit_before(self, end):
        out = subprocess.run(
            [f"{PG_BIN}/pg_waldump", "-p", os.path.join(self.pg_dir, "data", "pg_wal"),
             "-s", lsn_str(max(end - 262144, 0)), "-e", lsn_str(end), "-r", "Transaction"],
            capture_output=True, text=True).stdout
        commits = [lsn_int(l.split("lsn: ", 1)[1].split(",", 1)[0])
                   for l in out.splitlines() if "desc: COMMIT" in l]
        if not commits:
            raise RuntimeError("no COMMIT record found at the backlog's end")
        return commits[-1]

    # --- one drain ---------------------------------------------------------
    def drain(self, system, shape, run, last_commit):
        n = self.a.events
        tag = f"{system.replace('-', '_')}_{shape}_{run}"
        topic_prefix = f"bench.{tag}."
        kind = SYSTEMS[system][1]
        slot = tag
        logf = open(os.path.join(self.work, f"{tag}.log"), "w")
        if kind != "recv":
            self.warm_topic(topic_prefix + "order")
            self.warm_topic(topic_prefix + "sentinel")
        wal0 = lsn_int(self.q1("SELECT pg_current_wal_insert_lsn()::text"))
        pg0, k0 = tree_cpu(self.postmaster), self.kafka_cpu()
        t0 = time.monotonic()
        child = None
        pid = None
        t_active = None
        if system in ("relay", "poller", "poller-tuned"):
            binary = "outbox-relay" if system == "relay" else "outbox-poller"
            cmd = [os.path.join(self.a.bin, binary), "--pg", self.conninfo,
                   "--kafka", self.brokers, "--topic", topic_prefix + "{aggregatetype}",
                   "--set", "log.progress_interval_s=0", "--set", "http.listen="]
            if system == "relay":
                cmd += ["--slot", slot, "--set", "postgres.create_slot=false"]
            if system == "poller-tuned":
                cmd += ["--set", f"poller.batch_size={self.a.poller_batch}",
                        "--set", "poller.notify=true",
                        "--set", f"poller.interval_ms={self.a.poller_interval}"]
            child = subprocess.Popen(cmd, stdout=logf, stderr=logf)
            pid = child.pid
        elif system == "debezium":
            env = dict(os.environ, DEBEZIUM_WAIT="0", DEBEZIUM_SLOT=slot,
                       DEBEZIUM_PUBLICATION="bench_pub",
                       DEBEZIUM_TOPIC=topic_prefix + "${routedByValue}")
            ddir = os.path.join(self.work, f"dbz_{tag}")
            out = subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "start", ddir],
                                 env=env, capture_output=True, text=True, check=True).stdout
            pid = int([l for l in out.splitlines() if l.startswith("DEBEZIUM_PID=")][0].split("=")[1])
        else:  # pg_recvlogical
            cmd = [f"{PG_BIN}/pg_recvlogical", "-d", self.conninfo, "--slot", slot,
                   "--start", "--endpos", lsn_str(last_commit), "-f", "/dev/null"]
            if system == "recv-wal2json":
                cmd += sum((["-o", o] for o in WAL2JSON_OPTS), [])
            else:
                cmd += ["-o", "proto_version=1", "-o", "publication_names=bench_pub"]
            child = subprocess.Popen(cmd, stdout=logf, stderr=logf)
            pid = child.pid

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
        # stop it
        if system == "debezium":
            subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "stop", ddir], check=True)
        elif child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        delivered = None
        if kind != "recv":
            delivered = self.topic_count(topic_prefix + "order")
        res = dict(system=system, shape=shape, run=run, events=n, seconds=secs,
                   rate=n / secs, cpu_s=cpu, cpu_us_per_event=cpu * 1e6 / n,
                   peak_rss_mib=hwm / 1024, pg_cpu_s=pg_cpu, kafka_cpu_s=kafka_cpu,
                   drain_wal_bytes_per_event=max(wal1 - wal0, 0) / n,
                   startup_s=t_active, delivered=delivered)
        log(f"  {SYSTEMS[system][0]:<30} {secs:7.2f} s {n / secs:9.0f} ev/s  cpu {cpu:6.2f} s "
            f"({res['cpu_us_per_event']:.2f} us/ev)  rss {hwm / 1024:7.1f} MiB  pg cpu {pg_cpu:5.1f} s"
            f"  kafka cpu {kafka_cpu:5.1f} s  wal/ev {res['drain_wal_bytes_per_event']:.0f}"
            + (f"  delivered {delivered}" if delivered is not None else ""))
        if delivered is not None and delivered < n:
            raise RuntimeError(f"{system}: only {delivered} of {n} events in Kafka")
        return res

    # --- the suite ---------------------------------------------------------
    def reset(self):
        for (slot,) in self.q("SELECT slot_name FROM pg_replication_slots"):
            self.q("SELECT pg_drop_replication_slot(%s)", (slot,))
        self.q("TRUNCATE outbox")
        self.q("CHECKPOINT")

    def run(self):
        self.q(open(os.path.join(ROOT, "sql", "outbox.sql")).read())
        self.q(open(os.path.join(ROOT, "sql", "poller_notify.sql")).read())
        self.q("DROP PUBLICATION IF EXISTS bench_pub")
        self.q("CREATE PUBLICATION bench_pub FOR TABLE public.outbox")
        have_poller = os.path.exists(os.path.join(self.a.bin, "outbox-poller"))
        systems = [s for s in self.a.systems if have_poller or not s.startswith("poller")]
        if len(systems) < len(self.a.systems):
            log("outbox-poller not built: skipping the poller")
        cdc = [s for s in systems if SYSTEMS[s][1] != "poll"]
        poll = [s for s in systems if SYSTEMS[s][1] == "poll"]
        self.writes = {}
        for shape in self.a.per_txn:
            log(f"shape: {shape} event(s) per transaction, {self.a.events} events")
            if cdc:
                self.reset()
                for r in range(1, self.a.runs + 1):
                    for s in cdc:
                        plugin = "wal2json" if s in ("relay", "recv-wal2json") else "pgoutput"
                        self.q("SELECT pg_create_logical_replication_slot(%s, %s)",
                               (f"{s.replace('-', '_')}_{shape}_{r}", plugin))
                secs, wal, last_commit = self.write_backlog(shape)
                self.writes[shape] = (secs, wal)
                log(f"  wrote in {secs:.1f} s, WAL {wal / 1048576:.0f} MiB "
                    f"({wal / self.a.events:.0f} B/event), last commit {lsn_str(last_commit)}")
                for r in range(1, self.a.runs + 1):
                    order = cdc[r - 1:] + cdc[:r - 1]  # rotate the order per run
                    for s in order:
                        self.results.append(self.drain(s, shape, r, last_commit))
            for r in range(1, self.a.runs + 1):
                for s in poll:
                    self.reset()
                    secs, wal, last_commit = self.write_backlog(shape)
                    self.writes.setdefault(shape, (secs, wal))
                    self.results.append(self.drain(s, shape, r, last_commit))
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
                    startup=med(v, "startup_s"), runs=len(v))
            for k, v in out.items()}


def fmt(v, f="{:.2f}"):
    return "–" if v is None else f.format(v)


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
             "(producer linger.ms=20, limits.max_inflight_bytes 64 MiB, which bounds "
             "the relay's RSS); the tuned poller adds poller.batch_size="
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
    # targets
    L.append("### Issue 5 drain targets for outbox-relay")
    L.append("")
    L.append("| target | " + " | ".join(f"{sh}/txn" for sh in shapes) + " |")
    L.append("| --- | " + " | ".join("---" for _ in shapes) + " |")

    def row(name, fn):
        cells = []
        for sh in shapes:
            try:
                val, ok = fn(sh)
                cells.append(f"{val} {'met' if ok else '**missed**'}")
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("not measured")
        L.append(f"| {name} | " + " | ".join(cells) + " |")

    S = lambda sh, s: summary[(sh, s)]
    row("drain rate ≥ 0.8 × pg_recvlogical (wal2json)",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'recv-wal2json')['rate']:.2f}×",
                    S(sh, 'relay')['rate'] >= 0.8 * S(sh, 'recv-wal2json')['rate']))
    row("drain rate ≥ 3 × outbox-poller (tuned)",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'poller-tuned')['rate']:.1f}×",
                    S(sh, 'relay')['rate'] >= 3 * S(sh, 'poller-tuned')['rate']))
    row("drain rate ≥ 3 × outbox-poller (default)",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'poller')['rate']:.1f}×",
                    S(sh, 'relay')['rate'] >= 3 * S(sh, 'poller')['rate']))
    row("drain rate ≥ 2 × Debezium",
        lambda sh: (f"{S(sh, 'relay')['rate'] / S(sh, 'debezium')['rate']:.1f}×",
                    S(sh, 'relay')['rate'] >= 2 * S(sh, 'debezium')['rate']))
    row("CPU per event ≤ Debezium / 10",
        lambda sh: (f"{S(sh, 'debezium')['cpu_us'] / S(sh, 'relay')['cpu_us']:.1f}× less",
                    S(sh, 'debezium')['cpu_us'] >= 10 * S(sh, 'relay')['cpu_us']))
    row("peak RSS ≤ Debezium / 10",
        lambda sh: (f"{S(sh, 'debezium')['rss'] / S(sh, 'relay')['rss']:.1f}× smaller",
                    S(sh, 'debezium')['rss'] >= 10 * S(sh, 'relay')['rss']))
    row("CPU ≤ 2 µs/event",
        lambda sh: (f"{S(sh, 'relay')['cpu_us']:.2f} µs", S(sh, 'relay')['cpu_us'] <= 2))
    row("peak RSS ≤ 32 MiB",
        lambda sh: (f"{S(sh, 'relay')['rss']:.1f} MiB", S(sh, 'relay')['rss'] <= 32))
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
        L.append(f"| {r['shape']} | {SYSTEMS[r['system']][0]} | {r['run']} | {r['seconds']:.2f} "
                 f"| {r['rate']:,.0f} | {r['cpu_s']:.2f} | {r['peak_rss_mib']:.1f} "
                 f"| {r['pg_cpu_s']:.1f} | {r['kafka_cpu_s']:.1f} "
                 f"| {'–' if r['delivered'] is None else r['delivered']} |")
    L.append("")
    L.append("</details>")
    L.append(END_MARK)
    return "\n".join(L) + "\n"


def write_results(path, section):
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if BEGIN_MARK in text and END_MARK in text:
        head, rest = text.split(BEGIN_MARK, 1)
        tail = rest.split(END_MARK, 1)[1].lstrip("\n")
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
    p.add_argument("--events", type=int, default=200000)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--per-txn", default="10,1")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--plots", default=os.path.join(ROOT, "bench", "plots"))
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--poller-batch", type=int, default=5000)
    p.add_argument("--poller-interval", type=int, default=50)
    p.add_argument("--argv", default="")
    args = p.parse_args()
    args.per_txn = [int(x) for x in args.per_txn.split(",")]
    args.systems = args.systems.split(",")
    args.argv = args.argv.split()
    for s in args.systems:
        if s not in SYSTEMS:
            sys.exit(f"unknown system {s}; known: {', '.join(SYSTEMS)}")
    bench = Bench(args)
    bench.run()
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(bench.results, f, indent=1)
    summary = summarize(bench.results)
    plots = make_plots(args, summary, args.plots)
    write_results(args.results, report(args, bench, summary, plots))
    log(f"wrote {args.results}" + (f" and {len(plots)} plots in {args.plots}" if plots else ""))


if __name__ == "__main__":
    main()
