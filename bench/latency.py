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
"""

import argparse
import json
import os
import subprocess
import sys
import time

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN_MARK = "<!-- bench/latency: begin -->"
END_MARK = "<!-- bench/latency: end -->"
LABELS = {"relay": "outbox-relay", "relay-pgoutput": "outbox-relay (pgoutput)",
          "poller": "outbox-poller (default)",
          "poller-tuned": "outbox-poller (tuned: notify)",
          "debezium": "Debezium 3.2 (Kafka Connect)"}
KEEP_UP = 0.95  # sustained / offered below this: saturated


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadgen(a, run, rate, seconds, out=None):
    """One open-loop load; returns outbox-loadgen's JSON summary."""
    cmd = [os.path.join(a.bin, "outbox-loadgen"), "--pg", os.environ["OUTBOX_PG_CONNINFO"],
           "--rate", str(rate), "--seconds", str(seconds), "--writers", str(a.writers),
           "--run", run, "--max-seconds", str(2 * seconds)]
    if out:
        cmd += ["--out", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"outbox-loadgen failed at {rate} ev/s (exit {p.returncode})")
    return json.loads(p.stdout)


def measure(a, system, topic, rate):
    """One rate: consumer first (ready = positioned at the topic's end), then
    the load; returns the result row."""
    run = f"{system}-{rate}"
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
         "--max-seconds", str(3 * a.seconds + a.drain_timeout)],
        stdout=subprocess.PIPE, text=True)
    if cons.stdout.readline().strip() != "ready":
        cons.wait()
        raise RuntimeError(f"outbox-latency-consumer did not start on {topic} "
                           f"(exit {cons.returncode})")
    try:
        w = loadgen(a, run, rate, a.seconds, commits)
    except Exception:
        cons.terminate()
        cons.wait()
        raise
    out = cons.communicate()[0]
    if cons.returncode not in (0, 1):  # 1: events missing, reported below
        raise RuntimeError(f"outbox-latency-consumer failed (exit {cons.returncode})")
    c = json.loads(out.strip().splitlines()[-1])
    s, k = c["from_sched"], c["from_commit"] or {}
    r = dict(system=system, rate=rate, offered=n, sent=w["committed"], unsent=w["unsent"],
             received=c["received"], missing=n - c["received"], throughput=c["sustained_eps"],
             commit_rate=w["commit_rate"], writer_late_p99_s=w["late_p99_ms"] / 1000,
             writer_late_s=w["late_max_ms"] / 1000, commit_p99=w["commit_p99_ms"],
             p50=s["p50"], p99=s["p99"], p999=s["p999"], max=s["max"],
             c_p50=k.get("p50"), c_p99=k.get("p99"), c_p999=k.get("p999"),
             c_max=k.get("max"))
    if not r["received"]:
        for key in ("p50", "p99", "p999", "max"):
            r[key] = None
    r["kept_up"] = r["missing"] == 0 and r["throughput"] >= KEEP_UP * rate
    # Who fell behind first: the writers' commits (PostgreSQL, or a trigger
    # on the outbox table) or the delivery to Kafka.
    r["limit"] = None if r["kept_up"] else (
        "commits" if w["unsent"] or w["commit_rate"] < KEEP_UP * rate else "delivery")
    return r


def lat_slot(system):
    return f"{system.replace('-', '_')}_lat"


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
    relay = system.startswith("relay")
    cmd = [binp("outbox-relay" if relay else "outbox-poller"),
           "--pg", env["OUTBOX_PG_CONNINFO"], "--kafka", env["OUTBOX_KAFKA_BROKERS"],
           "--topic", topic_prefix + "{aggregatetype}",
           "--set", "log.progress_interval_s=0", "--set", "http.listen="]
    if relay:
        cmd += ["--slot", lat_slot(system)]
    if system == "relay-pgoutput":
        # The relay creates the slot and this publication itself.
        cmd += ["--set", "postgres.plugin=pgoutput",
                "--set", "postgres.publication=bench_relay_lat"]
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
    p.add_argument("--writers", type=int, default=32)
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
    p.add_argument("--argv", default="")
    a = p.parse_args()
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
        elif (s.startswith("relay") or s == "debezium"
              or os.path.exists(os.path.join(a.bin, "outbox-poller"))):
            systems.append(s)
    db = psycopg.connect(conninfo, autocommit=True)
    db.execute(open(os.path.join(ROOT, "sql", "outbox.sql")).read())
    db.execute("DROP PUBLICATION IF EXISTS bench_pub")
    db.execute("CREATE PUBLICATION bench_pub FOR TABLE public.outbox")
    db.execute("DROP PUBLICATION IF EXISTS bench_relay_lat")
    results = []
    for system in systems:
        db.execute("TRUNCATE outbox")
        if system == "poller-tuned":
            db.execute(open(os.path.join(ROOT, "sql", "poller_notify.sql")).read())
        else:
            db.execute("DROP TRIGGER IF EXISTS outbox_poller_wake ON public.outbox")
        prefix = f"bench.lat.{system.replace('-', '_')}."
        topic = prefix + "order"
        subprocess.run(["kcat", "-P", "-b", brokers, "-t", topic, "-k", "w"],
                       input=b"{}", check=True)  # the consumer needs the topic
        handle = start_system(system, a, env, a.work, prefix)
        try:
            if system.startswith("relay"):
                deadline = time.time() + 30
                while not db.execute("SELECT coalesce(bool_or(active), false) FROM pg_replication_slots "
                                     "WHERE slot_name = %s", (lat_slot(system),)).fetchone()[0]:
                    if time.time() > deadline:
                        sys.exit("relay did not start")
                    time.sleep(0.1)
            # Warm-up, not reported: first connections, topic metadata, JIT.
            loadgen(a, "warmup", min(rates), 3)
            time.sleep(2)
            for rate in rates:
                r = measure(a, system, topic, rate)
                results.append(r)
                ms = lambda v: "–" if v is None else f"{v:.1f} ms"
                log(f"  {LABELS[system]:<30} {rate:6d} ev/s: received {r['received']}/{r['offered']}, "
                    f"sustained {r['throughput']:.0f} ev/s; from scheduled p50 {ms(r['p50'])} "
                    f"p99 {ms(r['p99'])} p99.9 {ms(r['p999'])} max {ms(r['max'])}; "
                    f"from commit p99 {ms(r['c_p99'])}; writers late by up to "
                    f"{r['writer_late_s'] * 1000:.0f} ms"
                    + ("" if r["kept_up"] else f"; saturated ({r['limit']})"))
                if not r["kept_up"]:
                    break
        except RuntimeError as e:
            sys.exit(str(e))
        finally:
            stop_system(handle)
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
             f"{time.strftime('%Y-%m-%d')}. outbox-loadgen (C++, libpq) inserts one event "
             f"per durable transaction from {a.writers} connections on an open-loop "
             f"schedule for {a.seconds:g} s per rate (event i due at t0 + i/rate; a late "
             "writer sends at once and the delay counts), each payload (~350 bytes) "
             "carrying its scheduled and send times; outbox-latency-consumer (C++, "
             "librdkafka, fetch.wait.max.ms=5) stamps each record on arrival. Latency "
             "from scheduled time includes the commit and any writer backlog at "
             "saturation; latency from commit starts at the commit's acknowledgement to "
             "the writer. Same machine and servers as above, each system running "
             "alone. Producer defaults of each system (outbox-relay: linger.ms=20, the "
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
    L.append("| system | offered ev/s | received | sustained ev/s | p50 ms | p99 ms | p99.9 ms "
             "| max ms | from commit p50 / p99 / p99.9 / max ms | writers late p99 / max ms |")
    L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        L.append(f"| {LABELS[r['system']]} | {r['rate']} | {r['received']}/{r['offered']} "
                 f"| {r['throughput']:.0f}{'' if r['kept_up'] else ' (saturated)'} "
                 f"| {f(r['p50'])} | {f(r['p99'])} | {f(r['p999'])} | {f(r['max'])} "
                 f"| {f(r['c_p50'])} / {f(r['c_p99'])} / {f(r['c_p999'])} / {f(r['c_max'])} "
                 f"| {r['writer_late_p99_s'] * 1000:.0f} / {r['writer_late_s'] * 1000:.0f} |")
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
