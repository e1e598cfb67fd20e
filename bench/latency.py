#!/usr/bin/env python3
"""Steady-load latency (issue 5): open-loop writers at fixed rates, end-to-end
latency from commit to consumption, per system.

Started by bench/run.sh (servers in the environment as scripts/pg.sh and
scripts/kafka.sh print them). Each system is started once and kept running
through all rates. For each rate, outbox-loadgen (bench/loadgen.cc) inserts
one outbox event per durable transaction from WRITERS connections following
a fixed schedule: event i is due at t0 + i/rate, whatever happened to
earlier events (open loop; a writer that falls behind sends at once, and the
delay counts as latency, so there is no coordinated omission). Each payload
carries its run, sequence number, scheduled time and send time; the loader
records each commit's acknowledgement. outbox-latency-consumer
(bench/latency_consumer.cc) reads the system's topic from its end, stamps
each record on arrival and reports latency from the scheduled time (includes
the commit and any writer backlog) and from the commit ack, p50/p99/p99.9/max,
missing events and the sustained throughput. Rates go up in the order given;
a system stops at the first rate it does not sustain (events missing, or
delivered at under 95% of the offered rate), which is its saturation point;
--saturate keeps doubling the rate until that happens. Writes a section of
bench/RESULTS.md and a plot.

--reps R (R > 1) interleaves instead: R repetitions; in each, every rate is
measured for every system in turn, the order of the systems rotating at each
measurement, each system started afresh (new slot, warm-up) for each one and
stopped after it, so machine noise hits every system alike. That is how
exactly-once is set against at-least-once (issue 14): relay-eos is
outbox-relay with kafka.exactly_once=true, relay-eos-<N>ms the same with
kafka.transaction.max_ms=N, read by a read_committed consumer (an event
arrives once its Kafka transaction committed); the eos section gives the
medians over the repetitions, their spread and the ratios to outbox-relay.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

import statistics

import psycopg

from run import CHECKPOINT_TOPIC, LATENCY_SECTIONS, MARKS, eos_settings, register_eos

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN_MARK = "<!-- bench/latency: begin -->"
END_MARK = "<!-- bench/latency: end -->"
LABELS = {"relay": "outbox-relay", "relay-pgoutput": "outbox-relay (pgoutput)",
          "relay-eos": "outbox-relay (exactly-once)",
          "poller": "outbox-poller (default)",
          "poller-tuned": "outbox-poller (tuned: notify)",
          "debezium": "Debezium (Kafka Connect, bench/debezium's version)"}
# debezium-X.Y.Z: that Debezium release (X.Y.Z.Final) beside the pom's.
DEBEZIUM_RE = re.compile(r"^debezium-(\d+\.\d+\.\d+)$")
CLK = os.sysconf("SC_CLK_TCK")
KEEP_UP = 0.95  # sustained / offered below this: saturated
EOS_MARKS = ("<!-- bench/latency eos: begin -->", "<!-- bench/latency eos: end -->")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def debezium_version(system):
    """The Debezium release a debezium-X.Y.Z system runs; None for the pom's."""
    m = DEBEZIUM_RE.match(system)
    return f"{m.group(1)}.Final" if m else None


def register_debezium(systems):
    for s in systems:
        if DEBEZIUM_RE.match(s) and s not in LABELS:
            LABELS[s] = f"Debezium {debezium_version(s)} (Kafka Connect)"


def proc_cpu(pid, children=False):
    """CPU seconds (user + system) of pid, all its threads, plus with
    children those of its children: the reaped ones (cutime, cstime) and the
    live ones. 0 for a process that is gone."""
    def fields(p):
        try:
            with open(f"/proc/{p}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
    f = fields(pid)
    if f is None:
        return 0.0
    ticks = sum(int(x) for x in f[11:(15 if children else 13)])
    if children:
        for d in os.listdir("/proc"):
            if d.isdigit():
                c = fields(d)
                if c is not None and c[1] == str(pid):
                    ticks += int(c[11]) + int(c[12])
    return ticks / CLK


def machine_busy():
    """Busy CPU seconds of the whole machine since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / CLK  # less idle and iowait


class CpuMeter:
    """What each process used during one measurement, in cores (CPU seconds
    per second of wall time): the system under test, PostgreSQL (postmaster,
    walsenders and every backend, the writers' included), the Kafka broker,
    the load generator and the consumer (this script's reaped children), and
    the whole machine. Shows where the 2 cores went when a rate is not
    sustained."""

    def __init__(self, system_pid):
        self.pids = {"system": (system_pid, False),
                     "pg": (pid_from(os.path.join(os.environ["OUTBOX_PG_DIR"], "data",
                                                  "postmaster.pid")), True),
                     "kafka": (pid_from(os.path.join(os.environ["OUTBOX_KAFKA_DIR"], "pid")),
                               False)}
        self.start = self.sample()

    def sample(self):
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = {k: proc_cpu(p, ch) if p else 0.0 for k, (p, ch) in self.pids.items()}
        s.update(bench=ru.ru_utime + ru.ru_stime, machine=machine_busy(), wall=time.time())
        return s

    def cores(self):
        end = self.sample()
        wall = end["wall"] - self.start["wall"]
        return {f"cpu_{k}": (end[k] - self.start[k]) / wall
                for k in ("system", "pg", "kafka", "bench", "machine")}


def pid_from(path):
    try:
        with open(path) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return None


def loadgen(a, run, rate, seconds, out=None):
    """One open-loop load; returns outbox-loadgen's JSON summary."""
    cmd = [os.path.join(a.bin, "outbox-loadgen"), "--pg", os.environ["OUTBOX_PG_CONNINFO"],
           "--rate", str(rate), "--seconds", str(seconds), "--writers", str(a.writers),
           "--run", run, "--max-seconds", str(2 * seconds), "--per-txn", str(a.per_txn)]
    if out:
        cmd += ["--out", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"outbox-loadgen failed at {rate} ev/s (exit {p.returncode})")
    return json.loads(p.stdout)


def measure(a, system, topic, rate, rep=1, system_pid=None):
    """One rate: consumer first (ready = positioned at the topic's end), then
    the load; returns the result row, with the CPU each process used from the
    load's start to the last arrival (CpuMeter)."""
    run = f"{system}-{rate}" + (f"-{rep}" if a.reps > 1 else "")
    n = int(round(rate * a.seconds))
    commits = os.path.join(a.work, f"lat_{run}.commits.csv")
    # The consumer reads the commit times as soon as the file exists: never
    # let it find one left by an earlier invocation in the same directory.
    if os.path.exists(commits):
        os.remove(commits)
    cons = subprocess.Popen(
        [os.path.join(a.bin, "outbox-latency-consumer"), "--brokers",
         os.environ["OUTBOX_KAFKA_BROKERS"], "--topic", topic, "--run", run,
         "--expect", str(n), "--commits", commits,
         "--out", os.path.join(a.work, f"lat_{run}.arrivals.csv"),
         "--idle-timeout", str(a.drain_timeout),
         "--max-seconds", str(3 * a.seconds + a.drain_timeout)]
        # Exactly-once: what a read_committed consumer sees (every system is
        # read that way, librdkafka's default, which changes nothing for a
        # non-transactional producer; explicit here).
        + (["--isolation", "read_committed"] if eos_settings(system) else []),
        stdout=subprocess.PIPE, text=True)
    if cons.stdout.readline().strip() != "ready":
        cons.wait()
        raise RuntimeError(f"outbox-latency-consumer did not start on {topic} "
                           f"(exit {cons.returncode})")
    cpu = CpuMeter(system_pid)
    try:
        w = loadgen(a, run, rate, a.seconds, commits)
    except Exception:
        cons.terminate()
        cons.wait()
        raise
    out = cons.communicate()[0]
    cpu = cpu.cores()
    if cons.returncode not in (0, 1):  # 1: events missing, reported below
        raise RuntimeError(f"outbox-latency-consumer failed (exit {cons.returncode})")
    c = json.loads(out.strip().splitlines()[-1])
    s, k = c["from_sched"], c["from_commit"] or {}
    r = dict(system=system, rate=rate, rep=rep, loadavg=os.getloadavg()[0], offered=n,
             sent=w["committed"], unsent=w["unsent"],
             received=c["received"], missing=n - c["received"], throughput=c["sustained_eps"],
             commit_rate=w["commit_rate"], writer_late_p99_s=w["late_p99_ms"] / 1000,
             writer_late_s=w["late_max_ms"] / 1000, commit_p99=w["commit_p99_ms"],
             p50=s["p50"], p99=s["p99"], p999=s["p999"], max=s["max"],
             c_p50=k.get("p50"), c_p99=k.get("p99"), c_p999=k.get("p999"),
             c_max=k.get("max"), **cpu)
    if not r["received"]:
        for key in ("p50", "p99", "p999", "max"):
            r[key] = None
    r.update(split(os.path.join(a.work, f"lat_{run}.arrivals.csv")))
    r["kept_up"] = r["missing"] == 0 and r["throughput"] >= KEEP_UP * rate
    # Who fell behind first: the writers' commits (PostgreSQL, or a trigger
    # on the outbox table) or the delivery to Kafka.
    r["limit"] = None if r["kept_up"] else (
        "commits" if w["unsent"] or w["commit_rate"] < KEEP_UP * rate else "delivery")
    return r


CPU_KEYS = ("cpu_system", "cpu_pg", "cpu_kafka", "cpu_bench", "cpu_machine")
CPU_HEADER = "CPU cores: system / PostgreSQL / Kafka / writers+consumer / machine"


def cpu_cells(r, get=lambda r, k: r.get(k)):
    return " / ".join("–" if get(r, k) is None else f"{get(r, k):.2f}" for k in CPU_KEYS)


def percentile(v, p):
    """v sorted; the nearest-rank percentile, as outbox-latency-consumer's."""
    if not v:
        return None
    return v[min(max(int(-(-p * len(v) // 100)), 1), len(v)) - 1]


def split(arrivals):
    """Where each event's time from commit went, from the record timestamp
    (CreateTime: when the relay produced it, its clock, ms resolution):
    commit ack to produce (the relay reading and producing) and produce to
    arrival (Kafka, and for exactly-once the wait for the transaction's
    commit), p50 and p99 in ms."""
    to_produce, to_arrival = [], []
    try:
        with open(arrivals) as f:
            next(f)
            for line in f:
                _, _, _, ack, arrival, ts = (int(x) for x in line.split(","))
                if ack > 0 and ts > 0:
                    to_produce.append(ts - ack / 1e6)
                    to_arrival.append(arrival / 1e6 - ts)
    except (FileNotFoundError, StopIteration, ValueError):
        pass
    to_produce.sort()
    to_arrival.sort()
    return dict(produce_p50=percentile(to_produce, 50), produce_p99=percentile(to_produce, 99),
                arrive_p50=percentile(to_arrival, 50), arrive_p99=percentile(to_arrival, 99))


def lat_slot(system, session=0):
    """The relay's slot; with --reps a new one for every session (the relay
    refuses to stream from a slot that was dropped under it)."""
    return f"{system.replace('-', '_')}_lat" + (f"_{session}" if session else "")


def start_system(system, a, env, work, topic_prefix, session=0):
    binp = lambda b: os.path.join(a.bin, b)
    logf = open(os.path.join(work, f"lat_{system}.log"), "a")  # restarted with --reps
    if system.startswith("debezium"):
        name = "dbz_lat" + system[len("debezium"):].replace("-", "_").replace(".", "_")
        d = os.path.join(work, name)
        e = dict(env, DEBEZIUM_SLOT=name, DEBEZIUM_PUBLICATION="bench_pub",
                 DEBEZIUM_TOPIC=topic_prefix + "${routedByValue}")
        if debezium_version(system):
            e["DEBEZIUM_VERSION"] = debezium_version(system)
        subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "start", d], env=e,
                       check=True, stdout=logf)
        return ("debezium", d)
    relay = system.startswith("relay")
    cmd = [binp("outbox-relay" if relay else "outbox-poller"),
           "--pg", env["OUTBOX_PG_CONNINFO"], "--kafka", env["OUTBOX_KAFKA_BROKERS"],
           "--topic", topic_prefix + "{aggregatetype}",
           "--set", "log.progress_interval_s=0", "--set", "http.listen="]
    if relay:
        # Slot markers in the work directory, not in the user's state dir.
        cmd += ["--slot", lat_slot(system, session),
                "--set", f"postgres.state_dir={os.path.join(work, 'state')}"]
    if system == "relay-pgoutput":
        # The relay creates the slot and this publication itself.
        cmd += ["--set", "postgres.plugin=pgoutput",
                "--set", "postgres.publication=bench_relay_lat"]
    if system == "poller-tuned":
        cmd += ["--set", "poller.notify=true", "--set", f"poller.batch_size={a.poller_batch}"]
    if relay:
        # Extra settings for the relays, as in bench/run.py, e.g. to measure
        # a trade-off: OUTBOX_BENCH_RELAY_SET="postgres.status_interval_ms=10".
        for kv in os.environ.get("OUTBOX_BENCH_RELAY_SET", "").split():
            cmd += ["--set", kv]
    for kv in eos_settings(system):
        cmd += ["--set", kv]
    p = subprocess.Popen(cmd, stdout=logf, stderr=logf)
    return ("proc", p)


def handle_pid(handle):
    kind, h = handle
    return pid_from(os.path.join(h, "pid")) if kind == "debezium" else h.pid


def stop_system(handle):
    kind, h = handle
    if kind == "debezium":
        subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "stop", h], check=True)
    else:
        h.terminate()
        try:
            h.wait(timeout=30)
        except subprocess.TimeoutExpired:
            h.kill()
            h.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rates", default="200,1000,3000")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--writers", type=int, default=32)
    p.add_argument("--per-txn", type=int, default=1,
                   help="events per writer transaction (outbox-loadgen --per-txn)")
    p.add_argument("--saturate", action="store_true",
                   help="after the rates given, keep doubling until each system saturates")
    p.add_argument("--max-rate", type=int, default=64000)
    p.add_argument("--drain-timeout", type=float, default=30,
                   help="give up on a rate when no event arrived for this long")
    p.add_argument("--systems", default="relay,poller,poller-tuned,debezium")
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--poller-batch", type=int, default=5000)
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--plots", default=os.path.join(ROOT, "bench", "plots"))
    p.add_argument("--reps", type=int, default=1,
                   help="repetitions, interleaved: each rate for every system in turn, "
                   "each started afresh (see above)")
    p.add_argument("--sections", default="latency,eos",
                   help="which sections of --results to write: latency (the table of "
                   "every system), eos (exactly-once against at-least-once, with relay-eos "
                   "among the systems); bench/run.py's section names are accepted and ignored")
    p.add_argument("--argv", default="")
    a = p.parse_args()
    a.sections = a.sections.split(",")
    for s in a.sections:
        if s not in MARKS and s not in LATENCY_SECTIONS:
            sys.exit(f"unknown section {s}; known: {', '.join(list(MARKS) + list(LATENCY_SECTIONS))}")
    register_eos(a.systems.split(","), LABELS)
    register_debezium(a.systems.split(","))
    env = dict(os.environ)
    conninfo = env["OUTBOX_PG_CONNINFO"]
    brokers = env["OUTBOX_KAFKA_BROKERS"]
    rates = sorted(int(r) for r in a.rates.split(","))
    if a.saturate:
        while rates[-1] * 2 <= a.max_rate:
            rates.append(rates[-1] * 2)
    for b in ("outbox-loadgen", "outbox-latency-consumer"):
        if not os.path.exists(os.path.join(a.bin, b)):
            sys.exit(f"{os.path.join(a.bin, b)} not found: build the {b} target")
    systems = []
    for s in a.systems.split(","):
        if s not in LABELS:
            log(f"latency: no steady-load run for {s}")
        elif (s.startswith("relay") or s.startswith("debezium")
              or os.path.exists(os.path.join(a.bin, "outbox-poller"))):
            systems.append(s)
    db = psycopg.connect(conninfo, autocommit=True)
    db.execute(open(os.path.join(ROOT, "sql", "outbox.sql")).read())
    db.execute("DROP PUBLICATION IF EXISTS bench_pub")
    db.execute("CREATE PUBLICATION bench_pub FOR TABLE public.outbox")
    db.execute("DROP PUBLICATION IF EXISTS bench_relay_lat")
    if any(eos_settings(s) for s in systems):
        # The relay reads it at start (a record with another key is ignored).
        subprocess.run(["kcat", "-P", "-b", brokers, "-t", CHECKPOINT_TOPIC, "-k", "w"],
                       input=b"{}", check=True)
    results = []
    made = set()
    sessions = [0]

    def session(system, rates_here, rep=1):
        """Starts the system afresh, warms it up, measures rates_here in order
        (stopping at the first not sustained), stops it and drops its slot."""
        db.execute("TRUNCATE outbox")
        if system == "poller-tuned":
            db.execute(open(os.path.join(ROOT, "sql", "poller_notify.sql")).read())
        else:
            db.execute("DROP TRIGGER IF EXISTS outbox_poller_wake ON public.outbox")
        prefix = f"bench.lat.{system.replace('-', '_')}."
        topic = prefix + "order"
        if topic not in made:
            subprocess.run(["kcat", "-P", "-b", brokers, "-t", topic, "-k", "w"],
                           input=b"{}", check=True)  # the consumer needs the topic
            made.add(topic)
        n = sessions[0] if a.reps > 1 else 0
        sessions[0] += 1
        handle = start_system(system, a, env, a.work, prefix, n)
        out = []
        try:
            if system.startswith("relay"):
                deadline = time.time() + 30
                while not db.execute("SELECT coalesce(bool_or(active), false) FROM pg_replication_slots "
                                     "WHERE slot_name = %s", (lat_slot(system, n),)).fetchone()[0]:
                    if time.time() > deadline:
                        sys.exit("relay did not start")
                    time.sleep(0.1)
            # Warm-up, not reported: first connections, topic metadata, JIT.
            loadgen(a, "warmup", min(rates), 3)
            time.sleep(2)
            for rate in rates_here:
                r = measure(a, system, topic, rate, rep, handle_pid(handle))
                out.append(r)
                ms = lambda v: "–" if v is None else f"{v:.1f} ms"
                log(f"  {LABELS[system]:<30} {rate:6d} ev/s"
                    + (f" (rep {rep})" if a.reps > 1 else "")
                    + f": received {r['received']}/{r['offered']}, "
                    f"sustained {r['throughput']:.0f} ev/s; from scheduled p50 {ms(r['p50'])} "
                    f"p99 {ms(r['p99'])} p99.9 {ms(r['p999'])} max {ms(r['max'])}; "
                    f"from commit p50 {ms(r['c_p50'])} p99 {ms(r['c_p99'])}; writers late by up to "
                    f"{r['writer_late_s'] * 1000:.0f} ms; load {r['loadavg']:.1f}; "
                    f"CPU cores {cpu_cells(r)}"
                    + ("" if r["kept_up"] else f"; saturated ({r['limit']})"))
                if not r["kept_up"]:
                    break
        except RuntimeError as e:
            sys.exit(str(e))
        finally:
            stop_system(handle)
        for (slot,) in db.execute("SELECT slot_name FROM pg_replication_slots").fetchall():
            db.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        return out

    if a.reps <= 1:
        for system in systems:
            results += session(system, rates)
    else:
        k = 0
        for rep in range(1, a.reps + 1):
            saturated = set()  # systems past their saturation point in this rep
            for rate in rates:
                order = systems[k % len(systems):] + systems[:k % len(systems)]
                k += 1
                for system in order:
                    if system in saturated:
                        continue
                    rs = session(system, [rate], rep)
                    results += rs
                    if not rs[-1]["kept_up"]:
                        saturated.add(system)
    with open(os.path.join(a.work, "latency.json"), "w") as f:
        json.dump(results, f, indent=1)
    wrote = []
    if "latency" in a.sections:
        write_section(a.results, report(a, rates, results, plot(a, rates, results)),
                      (BEGIN_MARK, END_MARK))
        wrote.append("latency")
    if "eos" in a.sections and "relay" in systems and any(eos_settings(s) for s in systems):
        write_section(a.results, report_eos(a, rates, systems, results), EOS_MARKS)
        wrote.append("eos")
    log(f"wrote the {' and '.join(wrote) or 'no'} section(s) of {a.results}")


def write_section(path, section, marks):
    """Replaces the text between marks in path (or appends the section)."""
    begin, end = marks
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(path, "w").write(text)


def report_eos(a, rates, systems, results):
    """Exactly-once against at-least-once at each rate: medians over the
    repetitions, spread (min–max of the p99) and ratios to outbox-relay."""
    f = lambda v: "–" if v is None else f"{v:.1f}"
    begin, end = EOS_MARKS
    eos = [s for s in systems if eos_settings(s)]
    shown = ["relay"] + eos
    L = [begin, "## Exactly-once against at-least-once: steady-load latency (bench/latency.py)", ""]
    L.append("Command: `" + " ".join(["bench/run.sh"] + a.argv.split()) + "`, run on "
             f"{time.strftime('%Y-%m-%d')}. The steady load of the section above (outbox-loadgen: "
             f"{a.per_txn} event(s) per durable transaction from {a.writers} connections, open loop, "
             f"{a.seconds:g} s per measurement; outbox-latency-consumer stamps arrivals), "
             f"{a.reps} repetitions interleaved: in each, every rate is measured for every "
             "system in turn, the order of the systems rotating at each measurement, each "
             "system started afresh (new slot, 3 s warm-up load) for each measurement, so "
             "machine noise hits both modes alike. *exactly-once* is outbox-relay with "
             "`kafka.exactly_once=true` (`transaction.max_ms` 100 unless named), read with "
             "`isolation.level=read_committed`: an event arrives once the Kafka transaction "
             "holding it committed, at the first PostgreSQL commit after "
             "`transaction.max_ms`, plus the flush, checkpoint and commit round trips. "
             "*outbox-relay* is the default at-least-once relay, read the same way (which "
             "for a non-transactional producer is the same as read_uncommitted). Latency "
             "*from commit* starts at the writer's commit acknowledgement; *from scheduled* "
             "also counts the writers' own delay. Cells are the median over the "
             "repetitions; p99 from commit also gives the lowest and highest repetition.")
    L.append("")
    loads = [r["loadavg"] for r in results if r.get("loadavg") is not None]
    if loads:
        L.append(f"The machine was shared with other work: its 1-minute load average at the "
                 f"end of each measurement (2 cores; this benchmark's own servers, relay and "
                 f"writers included) was {min(loads):.1f} to {max(loads):.1f}, median "
                 f"{statistics.median(loads):.1f}.")
        L.append("")
    med = lambda rs, k: (statistics.median([r[k] for r in rs if r.get(k) is not None])
                         if any(r.get(k) is not None for r in rs) else None)
    rows = []
    for rate in rates:
        base = [r for r in results if r["system"] == "relay" and r["rate"] == rate]
        for s in shown:
            rs = [r for r in results if r["system"] == s and r["rate"] == rate]
            if not rs:
                continue
            p99s = [r["c_p99"] for r in rs if r["c_p99"] is not None]
            ratio = lambda k: (f"{med(rs, k) / med(base, k):.1f}×"
                               if base and med(base, k) and med(rs, k) is not None else "–")
            rows.append([str(rate), LABELS[s], f"{sum(r['kept_up'] for r in rs)}/{len(rs)}",
                         f"{med(rs, 'throughput'):.0f}", f(med(rs, "c_p50")),
                         f(med(rs, "c_p99")) + (f" ({min(p99s):.1f}–{max(p99s):.1f})" if p99s else ""),
                         f(med(rs, "c_p999")), f(med(rs, "c_max")),
                         f(med(rs, "p50")), f(med(rs, "p99")),
                         "–" if s == "relay" else f"{ratio('c_p50')} / {ratio('c_p99')}"])
    L.append("| offered ev/s | system | sustained (reps) | sustained ev/s | from commit p50 ms "
             "| p99 ms (min–max) | p99.9 ms | max ms | from scheduled p50 ms | p99 ms "
             "| × outbox-relay, from commit p50 / p99 |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    L += ["| " + " | ".join(r) + " |" for r in rows]
    L.append("")
    L.append("Where the time from commit goes, from each record's Kafka timestamp (when the "
             "relay produced it; millisecond resolution, so values under 1 ms read as 0 or "
             "-1): *commit → produce* is the relay reading the event and handing it to "
             "librdkafka, *produce → arrival* is Kafka: the produce request, and for "
             "exactly-once also the wait for the transaction's commit (the rest of "
             "`transaction.max_ms`, the flush, the checkpoint and the EndTxn round trip) "
             "before a read_committed fetch returns it. Medians over the repetitions of "
             "each measurement's p50 and p99.")
    L.append("")
    L.append("| offered ev/s | system | commit → produce p50 / p99 ms | produce → arrival "
             "p50 / p99 ms |")
    L.append("| --- | --- | --- | --- |")
    for rate in rates:
        for s in shown:
            rs = [r for r in results if r["system"] == s and r["rate"] == rate]
            if rs:
                L.append(f"| {rate} | {LABELS[s]} | {f(med(rs, 'produce_p50'))} / "
                         f"{f(med(rs, 'produce_p99'))} | {f(med(rs, 'arrive_p50'))} / "
                         f"{f(med(rs, 'arrive_p99'))} |")
    L.append("")
    L.append("<details><summary>every measurement, in the order run</summary>")
    L.append("")
    L.append("| rep | offered ev/s | system | received | sustained ev/s | from commit p50 / p99 / "
             "p99.9 / max ms | from scheduled p50 / p99 ms | writers late p99 / max ms | load avg |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        if r["system"] not in shown:
            continue
        L.append(f"| {r['rep']} | {r['rate']} | {LABELS[r['system']]} | "
                 f"{r['received']}/{r['offered']} | {r['throughput']:.0f}"
                 f"{'' if r['kept_up'] else ' (saturated)'} | {f(r['c_p50'])} / {f(r['c_p99'])} / "
                 f"{f(r['c_p999'])} / {f(r['c_max'])} | {f(r['p50'])} / {f(r['p99'])} | "
                 f"{r['writer_late_p99_s'] * 1000:.0f} / {r['writer_late_s'] * 1000:.0f} | "
                 f"{r['loadavg']:.1f} |")
    L.append("")
    L.append("</details>")
    L.append("")
    L.append(end)
    return "\n".join(L) + "\n"


def plot(a, rates, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    os.makedirs(a.plots, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for s in LABELS:
        rs = [r for r in results if r["system"] == s and r["received"]]
        if rs:
            line, = ax.plot([r["rate"] for r in rs], [r["p99"] for r in rs], marker="o",
                            label=LABELS[s])
            sat = [r for r in rs if not r["kept_up"]]  # saturated: an x on top
            if sat:
                ax.plot([r["rate"] for r in sat], [r["p99"] for r in sat], "x",
                        color=line.get_color(), markersize=12)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("offered load (events/s, one event per transaction)")
    ax.set_ylabel("p99 end-to-end latency (ms)")
    ax.set_title("Steady load: p99 latency from scheduled send to consumption\n"
                 "(x: saturated, the system's last rate)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(a.plots, "latency_p99.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(a, rates, results, plotfile):
    f = lambda v: "–" if v is None else f"{v:.1f}"
    L = [BEGIN_MARK, "## Steady load: end-to-end latency (bench/latency.py)", ""]
    L.append("Command: `" + " ".join(["bench/run.sh"] + a.argv.split()) + "`, run on "
             f"{time.strftime('%Y-%m-%d')}. outbox-loadgen (C++, libpq) inserts {a.per_txn} event(s) "
             f"per durable transaction from {a.writers} connections on an open-loop "
             f"schedule for {a.seconds:g} s per rate (event i due at t0 + i/rate; a late "
             "writer sends at once and the delay counts), each payload (~350 bytes) "
             "carrying its scheduled and send times; outbox-latency-consumer (C++, "
             "librdkafka, fetch.wait.max.ms=5) stamps each record on arrival. Latency "
             "from scheduled time includes the commit and any writer backlog at "
             "saturation; latency from commit starts at the commit's acknowledgement to "
             "the writer. Same machine and servers as above, each system running "
             "alone. Producer defaults of each system (outbox-relay: linger.ms=5, the "
             "same with postgres.plugin=pgoutput for outbox-relay (pgoutput), which "
             "creates its slot and publication itself; "
             "outbox-poller: poller.interval_ms=500 by default, tuned = notify + batch "
             f"{a.poller_batch}; Debezium: poll.interval.ms=500, producer linger.ms=0).")
    L.append("")
    L.append("Sustained is the arrival rate between the first and the last event of the "
             f"rate. Rates go up until a system saturates: events missing after "
             f"{a.drain_timeout:g} s without progress, or sustained under "
             f"{KEEP_UP * 100:.0f}% of offered; that rate is the system's last. "
             "'writers late' is how far the load generator fell behind its schedule "
             "(p99 / max): when it is large, commits are the bottleneck (PostgreSQL on "
             "this machine, or the NOTIFY trigger of the tuned poller, which makes "
             "commits queue on PostgreSQL's notification lock), and the latency from "
             "the scheduled time includes that queueing while the latency from commit "
             "excludes it.")
    L.append("")
    L.append(f"{CPU_HEADER}: CPU seconds per second of the measurement (from the "
             "load's start to the last arrival) of the system under test (every thread; "
             "Debezium: the Connect JVM), of PostgreSQL (the postmaster and every backend: "
             "walsender, the writers' sessions, the poller's), of the Kafka broker's JVM, "
             "of outbox-loadgen and outbox-latency-consumer together, and of the whole "
             "machine (of 2 cores).")
    L.append("")
    if a.reps > 1:
        L.append(f"Medians over the {a.reps} repetitions (each cell: the median of the "
                 "repetitions' values):")
        L.append("")
        L.append("| offered ev/s | system | sustained (reps) | from commit p50 / p99 / p99.9 ms "
                 f"| from scheduled p99 ms | writers late p99 ms | {CPU_HEADER} |")
        L.append("| --- | --- | --- | --- | --- | --- | --- |")
        med = lambda rs, k: (statistics.median([r[k] for r in rs if r.get(k) is not None])
                             if any(r.get(k) is not None for r in rs) else None)
        for rate in rates:
            for s in LABELS:
                rs = [r for r in results if r["system"] == s and r["rate"] == rate]
                if not rs:
                    continue
                late = med([dict(v=r["writer_late_p99_s"] * 1000) for r in rs], "v")
                L.append(f"| {rate} | {LABELS[s]} | {sum(r['kept_up'] for r in rs)}/{len(rs)} "
                         f"| {f(med(rs, 'c_p50'))} / {f(med(rs, 'c_p99'))} / "
                         f"{f(med(rs, 'c_p999'))} | {f(med(rs, 'p99'))} | {f(late)} "
                         f"| {cpu_cells(rs, med)} |")
        L.append("")
    L.append("| system | offered ev/s | received | sustained ev/s | p50 ms | p99 ms | p99.9 ms "
             "| max ms | from commit p50 / p99 / p99.9 / max ms | writers late p99 / max ms "
             f"| {CPU_HEADER} | load avg |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        rep = f" (rep {r['rep']})" if a.reps > 1 else ""
        L.append(f"| {LABELS[r['system']]}{rep} | {r['rate']} | {r['received']}/{r['offered']} "
                 f"| {r['throughput']:.0f}{'' if r['kept_up'] else ' (saturated)'} "
                 f"| {f(r['p50'])} | {f(r['p99'])} | {f(r['p999'])} | {f(r['max'])} "
                 f"| {f(r['c_p50'])} / {f(r['c_p99'])} / {f(r['c_p999'])} / {f(r['c_max'])} "
                 f"| {r['writer_late_p99_s'] * 1000:.0f} / {r['writer_late_s'] * 1000:.0f} "
                 f"| {cpu_cells(r)} | {r['loadavg']:.1f} |")
    L.append("")
    L.append("Saturation (highest rate sustained; first rate not):")
    L.append("")
    for s in LABELS:
        rs = [r for r in results if r["system"] == s]
        if not rs:
            continue
        ok = [r["rate"] for r in rs if r["kept_up"]]
        bad = [r for r in rs if not r["kept_up"]]
        line = f"- {LABELS[s]}: " + (f"sustained up to {max(ok)} ev/s" if ok else
                                     "sustained none of the rates")
        if bad:
            b = bad[0]
            why = ("the writers' commits fell behind first (PostgreSQL-side limit, "
                   f"{b['commit_rate']:.0f} commits/s)" if b["limit"] == "commits"
                   else "delivery fell behind")
            line += (f"; at {b['rate']} ev/s it delivered {b['throughput']:.0f} ev/s, "
                     f"{b['received']}/{b['offered']} events: {why}")
        else:
            line += " (not saturated at the highest rate tried)"
        L.append(line)
    L.append("")
    by = {(r["system"], r["rate"]): r for r in results}
    L.append("Target: outbox-relay's p99 at least 10 times lower than the polling "
             "relay's at the same rate:")
    L.append("")
    for s in ("poller", "poller-tuned"):
        for rate in rates:
            if (s, rate) in by and ("relay", rate) in by and by[("relay", rate)]["p99"]:
                x = by[(s, rate)]["p99"] / by[("relay", rate)]["p99"]
                L.append(f"- {LABELS[s]} at {rate} ev/s: {x:.1f}× "
                         f"{'(met)' if x >= 10 else '(**missed**)'}")
    L.append("")
    if plotfile:
        L.append(f"Plot: [latency_p99.png](plots/{os.path.basename(plotfile)}).")
        L.append("")
    L.append(END_MARK)
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
