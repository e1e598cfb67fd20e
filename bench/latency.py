#!/usr/bin/env python3
"""Steady-load latency (issue 5): open-loop writers at fixed rates, end-to-end
latency from commit to consumption, per system.

Started by bench/run.sh (servers in the environment as scripts/pg.sh and
scripts/kafka.sh print them). Each system is started once and kept running
through all rates. For each rate, WRITERS connections insert one outbox
event per transaction (durable commits) following a fixed schedule: event i
is due at t0 + i/rate, whatever happened to earlier events (open loop; a
writer that falls behind sends at once, and the delay counts as latency, so
there is no coordinated omission). Each payload carries its scheduled time
and the database's clock at insert. A kcat consumer on the system's topic
stamps each record on arrival; latency = arrival - scheduled time (includes
the commit), and arrival - insert clock. Reports p50/p99/p99.9/max and the
sustained throughput, and writes a section of bench/RESULTS.md and a plot.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN_MARK = "<!-- bench/latency: begin -->"
END_MARK = "<!-- bench/latency: end -->"
LABELS = {"relay": "outbox-relay", "poller": "outbox-poller (default)",
          "poller-tuned": "outbox-poller (tuned: notify)",
          "debezium": "Debezium 3.2 (Kafka Connect)"}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


class Consumer:
    """kcat reading one topic from its end; records arrival times by run id."""

    def __init__(self, brokers, topic):
        self.proc = subprocess.Popen(
            ["kcat", "-C", "-u", "-q", "-b", brokers, "-t", topic, "-o", "end",
             "-X", "fetch.wait.max.ms=5", "-f", "%s\n"],
            stdout=subprocess.PIPE, text=True, bufsize=1)
        self.arrivals = {}  # run -> list of (sched_ns, ins_ns, arrival_ns)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            now = time.time_ns()
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if "run" not in v:
                continue
            with self.lock:
                self.arrivals.setdefault(v["run"], []).append(
                    (v["sched_ns"], int(float(v["ins_s"]) * 1e9), now))

    def count(self, run):
        with self.lock:
            return len(self.arrivals.get(run, []))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def load(conninfo, run, rate, seconds, writers):
    """Open-loop load: returns (events sent, max lateness of a send in s)."""
    n = int(rate * seconds)
    nxt = [0]
    lock = threading.Lock()
    late = [0.0]
    t0 = time.time_ns() + 200_000_000  # connections are open by then
    period = 1e9 / rate

    errors = []

    def writer():
        try:
            write()
        except Exception as e:  # surfaced after join
            errors.append(e)
            with lock:
                nxt[0] = n

    def write():
        with psycopg.connect(conninfo, autocommit=True) as c:
            c.execute("SELECT 1")
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= n:
                    return
                due = t0 + int(i * period)
                wait = (due - time.time_ns()) / 1e9
                if wait > 0:
                    time.sleep(wait)
                else:
                    late[0] = max(late[0], -wait)
                c.execute(
                    "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) "
                    "VALUES (gen_random_uuid(), 'order', %s, 'OrderCreated', "
                    "jsonb_build_object('run', %s::text, 'sched_ns', %s::bigint, "
                    "'ins_s', extract(epoch FROM clock_timestamp())::text, "
                    "'note', repeat('x', 300)))",
                    (str(i % 10000), run, due))

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return n, late[0]


def start_system(system, a, env, work, topic_prefix):
    binp = lambda b: os.path.join(a.bin, b)
    logf = open(os.path.join(work, f"lat_{system}.log"), "w")
    if system == "debezium":
        d = os.path.join(work, "dbz_lat")
        e = dict(env, DEBEZIUM_SLOT="dbz_lat", DEBEZIUM_PUBLICATION="bench_pub",
                 DEBEZIUM_TOPIC=topic_prefix + "${routedByValue}")
        subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), "start", d], env=e,
                       check=True, stdout=logf)
        return ("debezium", d)
    cmd = [binp("outbox-relay" if system == "relay" else "outbox-poller"),
           "--pg", env["OUTBOX_PG_CONNINFO"], "--kafka", env["OUTBOX_KAFKA_BROKERS"],
           "--topic", topic_prefix + "{aggregatetype}",
           "--set", "log.progress_interval_s=0", "--set", "http.listen="]
    if system == "relay":
        cmd += ["--slot", "relay_lat"]
    if system == "poller-tuned":
        cmd += ["--set", "poller.notify=true", "--set", f"poller.batch_size={a.poller_batch}"]
    p = subprocess.Popen(cmd, stdout=logf, stderr=logf)
    return ("proc", p)


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
    p.add_argument("--writers", type=int, default=16)
    p.add_argument("--systems", default="relay,poller,poller-tuned,debezium")
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--poller-batch", type=int, default=5000)
    p.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    p.add_argument("--plots", default=os.path.join(ROOT, "bench", "plots"))
    p.add_argument("--argv", default="")
    a = p.parse_args()
    env = dict(os.environ)
    conninfo = env["OUTBOX_PG_CONNINFO"]
    brokers = env["OUTBOX_KAFKA_BROKERS"]
    rates = [int(r) for r in a.rates.split(",")]
    systems = [s for s in a.systems.split(",")
               if s in ("relay", "debezium")
               or os.path.exists(os.path.join(a.bin, "outbox-poller"))]
    db = psycopg.connect(conninfo, autocommit=True)
    db.execute(open(os.path.join(ROOT, "sql", "outbox.sql")).read())
    db.execute("DROP PUBLICATION IF EXISTS bench_pub")
    db.execute("CREATE PUBLICATION bench_pub FOR TABLE public.outbox")
    results = []
    for system in systems:
        db.execute("TRUNCATE outbox")
        if system == "poller-tuned":
            db.execute(open(os.path.join(ROOT, "sql", "poller_notify.sql")).read())
        else:
            db.execute("DROP TRIGGER IF EXISTS outbox_poller_wake ON public.outbox")
        prefix = f"bench.lat.{system.replace('-', '_')}."
        subprocess.run(["kcat", "-P", "-b", brokers, "-t", prefix + "order", "-k", "w"],
                       input=b"{}", check=True)
        consumer = Consumer(brokers, prefix + "order")
        handle = start_system(system, a, env, a.work, prefix)
        if system == "relay":
            deadline = time.time() + 30
            while not db.execute("SELECT coalesce(bool_or(active), false) FROM pg_replication_slots "
                                 "WHERE slot_name = 'relay_lat'").fetchone()[0]:
                if time.time() > deadline:
                    sys.exit("relay did not start")
                time.sleep(0.1)
        time.sleep(1)  # consumer assigned
        # Warm-up, not reported: first connections, topic metadata, JIT.
        load(conninfo, "warmup", min(rates), 3, a.writers)
        time.sleep(1)
        for rate in rates:
            run = f"{system}-{rate}"
            sent, late = load(conninfo, run, rate, a.seconds, a.writers)
            deadline = time.time() + 30
            while consumer.count(run) < sent and time.time() < deadline:
                time.sleep(0.1)
            with consumer.lock:
                arr = list(consumer.arrivals.get(run, []))
            lat = sorted((x[2] - x[0]) / 1e6 for x in arr)
            lat_ins = sorted((x[2] - x[1]) / 1e6 for x in arr)
            span = (max(x[2] for x in arr) - min(x[0] for x in arr)) / 1e9 if arr else 0
            r = dict(system=system, rate=rate, sent=sent, received=len(set(arr)),
                     throughput=len(arr) / span if span else 0, writer_late_s=late,
                     p50=pct(lat, 50), p99=pct(lat, 99), p999=pct(lat, 99.9),
                     max=lat[-1] if lat else None, ins_p50=pct(lat_ins, 50),
                     ins_p99=pct(lat_ins, 99))
            results.append(r)
            log(f"  {LABELS[system]:<30} {rate:6d} ev/s: received {r['received']}/{sent}, "
                f"p50 {r['p50']:.1f} ms p99 {r['p99']:.1f} ms p99.9 {r['p999']:.1f} ms "
                f"max {r['max']:.1f} ms, writers late by up to {late * 1000:.0f} ms"
                if lat else f"  {system} {rate}: nothing received")
        stop_system(handle)
        consumer.stop()
        for (slot,) in db.execute("SELECT slot_name FROM pg_replication_slots").fetchall():
            db.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    with open(os.path.join(a.work, "latency.json"), "w") as f:
        json.dump(results, f, indent=1)
    section = report(a, rates, results, plot(a, rates, results))
    text = open(a.results).read() if os.path.exists(a.results) else "# Benchmark results\n"
    if BEGIN_MARK in text and END_MARK in text:
        head, rest = text.split(BEGIN_MARK, 1)
        tail = rest.split(END_MARK, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    open(a.results, "w").write(text)
    log(f"wrote the latency section of {a.results}")


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
        pts = [(r["rate"], r["p99"]) for r in results if r["system"] == s and r["p99"]]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=LABELS[s])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("offered load (events/s, one event per transaction)")
    ax.set_ylabel("p99 end-to-end latency (ms)")
    ax.set_title("Steady load: p99 latency from scheduled send to consumption")
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
             f"{time.strftime('%Y-%m-%d')}. {a.writers} writer connections insert one "
             f"event per durable transaction on an open-loop schedule for {a.seconds:.0f} s "
             "per rate; latency runs from each event's scheduled send time (so it "
             "includes the commit, and any writer backlog at saturation) to its arrival "
             "at a kcat consumer. Same machine and servers as above, each system "
             "running alone. Producer defaults of each system (outbox-relay: "
             "linger.ms=20; outbox-poller: poller.interval_ms=500 by default, tuned = "
             f"notify + batch {a.poller_batch}; Debezium: poll.interval.ms=500, "
             "producer linger.ms=0).")
    L.append("")
    L.append("'writers late' is how far the load generator fell behind its schedule: "
             "when it is large, PostgreSQL (or the generator) is saturated and the "
             "latency from the scheduled time includes that queueing; the latency "
             "from insert (the database clock at the INSERT) excludes it. The NOTIFY "
             "trigger of the tuned poller makes commits queue on PostgreSQL's "
             "notification lock, which shows there.")
    L.append("")
    L.append("| system | offered ev/s | received | sustained ev/s | p50 ms | p99 ms | p99.9 ms "
             "| max ms | p50 / p99 from insert ms | writers late by ms |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        L.append(f"| {LABELS[r['system']]} | {r['rate']} | {r['received']}/{r['sent']} "
                 f"| {r['throughput']:.0f} | {f(r['p50'])} | {f(r['p99'])} | {f(r['p999'])} "
                 f"| {f(r['max'])} | {f(r['ins_p50'])} / {f(r['ins_p99'])} "
                 f"| {r['writer_late_s'] * 1000:.0f} |")
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
