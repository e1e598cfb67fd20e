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

The harness it shares with bench/run.py is bench/harness/ (the systems,
Kafka, processes; the report in report_latency.py).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from harness import ROOT, log
from harness.db import Servers
from harness.kafka import (CHECKPOINT_TOPIC, broker_gc, broker_request_times, request_mean_ms,
                           warm_topic)
from harness.procs import (PIN_DATABASE, PIN_DELIVERY, CpuMeter, pid_from, pin_command,
                           pin_tree, stop_process)
from harness.report import LATENCY_SECTIONS, MARKS, write_section
from harness.report_latency import (BEGIN_MARK, END_MARK, EOS_MARKS, KEEP_UP, cpu_cells,
                                    plot, report, report_eos)
from harness.systems import (LABELS, debezium, debezium_version, eos_sets, eos_settings,
                             program_command, register_debezium, register_eos, relay_env_sets)


def loadgen(a, run, rate, seconds, out=None):
    """One open-loop load; returns outbox-loadgen's JSON summary."""
    cmd = [os.path.join(a.bin, "outbox-loadgen"), "--pg", os.environ["OUTBOX_PG_CONNINFO"],
           "--rate", str(rate), "--seconds", str(seconds), "--writers", str(a.writers),
           "--run", run, "--max-seconds", str(2 * seconds), "--per-txn", str(a.per_txn)]
    if out:
        cmd += ["--out", out]
    p = subprocess.run(pin_command(cmd, a.pin and PIN_DATABASE),
                       stdout=subprocess.PIPE, text=True)
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
    # The broker's request times before the load (a JVM of Kafka's tools:
    # read before anything is timed).
    kafka_dir, jmx_port = os.environ.get("OUTBOX_KAFKA_DIR"), os.environ.get(
        "OUTBOX_BENCH_KAFKA_JMX_PORT")
    requests_before = broker_request_times(kafka_dir, jmx_port)
    cons = subprocess.Popen(pin_command(
        [os.path.join(a.bin, "outbox-latency-consumer"), "--brokers",
         os.environ["OUTBOX_KAFKA_BROKERS"], "--topic", topic, "--run", run,
         "--expect", str(n), "--commits", commits,
         "--out", os.path.join(a.work, f"lat_{run}.arrivals.csv"),
         "--idle-timeout", str(a.drain_timeout),
         "--max-seconds", str(3 * a.seconds + a.drain_timeout)]
        # The consumer's properties varied, e.g.
        # OUTBOX_BENCH_CONSUMER_SET="fetch.wait.max.ms=100".
        + [x for kv in os.environ.get("OUTBOX_BENCH_CONSUMER_SET", "").split()
           for x in ("--set", kv)]
        # Exactly-once: what a read_committed consumer sees (every system is
        # read that way, librdkafka's default, which changes nothing for a
        # non-transactional producer; explicit here).
        + (["--isolation", "read_committed"] if eos_settings(system) else []),
        a.pin and PIN_DELIVERY), stdout=subprocess.PIPE, text=True)
    if cons.stdout.readline().strip() != "ready":
        cons.wait()
        raise RuntimeError(f"outbox-latency-consumer did not start on {topic} "
                           f"(exit {cons.returncode})")
    cpu = CpuMeter(system_pid)
    metrics_url = METRICS_URLS.get(system_pid)
    before = scrape_histograms(metrics_url)
    started = time.time()
    try:
        w = loadgen(a, run, rate, a.seconds, commits)
    except Exception:
        cons.terminate()
        cons.wait()
        raise
    out = cons.communicate()[0]
    cpu = cpu.cores()
    ended = time.time()
    after = scrape_histograms(metrics_url)
    requests_after = broker_request_times(kafka_dir, jmx_port)
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
    for key, name in RELAY_HISTOGRAMS.items():
        for p in (50, 99):
            r[f"{key}_p{p}"] = histogram_quantile(before.get(name), after.get(name), p)
    # The broker: its mean produce and fetch request times over the
    # measurement (JMX; a fetch's includes its long poll), the recent p99 of
    # produce, and its GC pauses from the load's start to the last arrival.
    for key in ("produce", "fetch"):
        r[f"broker_{key}_ms"] = request_mean_ms(requests_before, requests_after, key)
    r["broker_produce_p99_ms"] = (requests_after.get("produce") or (None, None, None))[2]
    gc = broker_gc(os.environ.get("OUTBOX_BENCH_KAFKA_GC_LOG"), started, ended)
    r["gc_pauses"], r["gc_ms"], r["gc_max_ms"] = gc if gc else (None, None, None)
    r["kept_up"] = r["missing"] == 0 and r["throughput"] >= KEEP_UP * rate
    # Who fell behind first: the writers' commits (PostgreSQL, or a trigger
    # on the outbox table) or the delivery to Kafka.
    r["limit"] = None if r["kept_up"] else (
        "commits" if w["unsent"] or w["commit_rate"] < KEEP_UP * rate else "delivery")
    return r


def percentile(v, p):
    """v sorted; the nearest-rank percentile, as outbox-latency-consumer's."""
    if not v:
        return None
    return v[min(max(int(-(-p * len(v) // 100)), 1), len(v)) - 1]


def split(arrivals):
    """Where each event's time from commit went, from the record timestamp
    (its clock, ms resolution): the relays' and the poller's produce call
    (the relays run with outbox.timestamp=produce for it, start_system),
    Debezium's change event ts_ms (when it built the event, before its
    queue and Connect's producer): commit ack to the stamp, and the stamp to
    arrival (for exactly-once also the wait for the transaction's commit),
    p50 and p99 in ms."""
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


# The relays' own histograms from commit, scraped from /metrics before and
# after each measurement: to the relay reading the transaction, and to
# librdkafka's delivery report.
RELAY_HISTOGRAMS = {"received": "outbox_relay_receive_latency_seconds",
                    "reported": "outbox_relay_delivery_latency_seconds"}
METRICS_URLS = {}  # a relay's pid -> its /metrics


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_histograms(url):
    """{histogram name: {upper bound: cumulative count}} from a relay's
    /metrics; {} without one (other systems) or when the scrape fails."""
    if not url:
        return {}
    try:
        body = urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return {}
    out = {}
    for line in body.splitlines():
        for name in RELAY_HISTOGRAMS.values():
            prefix = name + '_bucket{le="'
            if line.startswith(prefix):
                le, value = line[len(prefix):].split('"}')
                out.setdefault(name, {})[float(le)] = float(value)
    return out


def histogram_quantile(before, after, p):
    """The p-th percentile in ms of what a histogram counted between two
    scrapes, interpolated linearly inside its bucket as Prometheus's
    histogram_quantile does (so its resolution is the bucket's: 1, 2.5, 5,
    10, 25 ms ...); None without both scrapes or any observation."""
    if not before or not after:
        return None
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0) for b in bounds]
    total = counts[-1]
    if total <= 0:
        return None
    rank = p / 100 * total
    lower, below = 0.0, 0.0
    for bound, cum in zip(bounds, counts):
        if cum >= rank:
            if bound == float("inf"):
                return lower * 1000
            inside = cum - below
            return (lower + (bound - lower) * ((rank - below) / inside if inside else 1)) * 1000
        lower, below = bound, cum
    return None


def lat_slot(system, session=0):
    """The relay's slot; with --reps a new one for every session (the relay
    refuses to stream from a slot that was dropped under it)."""
    return f"{system.replace('-', '_')}_lat" + (f"_{session}" if session else "")


def start_system(system, a, env, work, topic_prefix, session=0):
    logf = open(os.path.join(work, f"lat_{system}.log"), "a")  # restarted with --reps
    if system.startswith("debezium"):
        name = "dbz_lat" + system[len("debezium"):].replace("-", "_").replace(".", "_")
        d = os.path.join(work, name)
        e = dict(env, DEBEZIUM_SLOT=name, DEBEZIUM_PUBLICATION="bench_pub",
                 DEBEZIUM_TOPIC=topic_prefix + "${routedByValue}")
        if debezium_version(system):
            e["DEBEZIUM_VERSION"] = debezium_version(system)
        debezium("start", d, e, stdout=logf)
        if a.pin:
            pin_tree(pid_from(os.path.join(d, "pid")), PIN_DELIVERY)
        return ("debezium", d)
    relay = system.startswith("relay")
    cmd = program_command(a.bin, system, env["OUTBOX_PG_CONNINFO"],
                          env["OUTBOX_KAFKA_BROKERS"], topic_prefix)
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
        # Records stamped when the relay hands them to librdkafka, not with
        # the commit time (the default, outbox.timestamp auto): split()
        # reads the stamp as the produce time.
        cmd += ["--set", "outbox.timestamp=produce"]
        # /metrics on a free port: the relay's histograms from commit.
        port = free_port()
        cmd += ["--set", f"http.listen=127.0.0.1:{port}"]
        # Extra settings for the relays, as in bench/run.py.
        cmd += relay_env_sets()
    cmd += eos_sets(system)
    p = subprocess.Popen(pin_command(cmd, a.pin and PIN_DELIVERY),
                         stdout=logf, stderr=logf)
    if relay:
        METRICS_URLS[p.pid] = f"http://127.0.0.1:{port}/metrics"
    return ("proc", p)


def handle_pid(handle):
    kind, h = handle
    return pid_from(os.path.join(h, "pid")) if kind == "debezium" else h.pid


def stop_system(handle):
    kind, h = handle
    if kind == "debezium":
        debezium("stop", h)
    else:
        stop_process(h)


def parse_args():
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
    p.add_argument("--from-json", metavar="FILE",
                   help="measure nothing: write the sections of --results from a "
                   "latency.json a run left in its work dir (OUTBOX_BENCH_KEEP=1)")
    p.add_argument("--pin", action="store_true",
                   help="writers and PostgreSQL on CPU 0; Kafka, the system "
                        "and the consumer on CPU 1 (taskset)")
    a = p.parse_args()
    a.sections = a.sections.split(",")
    for s in a.sections:
        if s not in MARKS and s not in LATENCY_SECTIONS:
            sys.exit(f"unknown section {s}; known: {', '.join(list(MARKS) + list(LATENCY_SECTIONS))}")
    return a


def log_rate(r, reps):
    """One measurement's line on stderr."""
    ms = lambda v: "–" if v is None else f"{v:.1f} ms"
    log(f"  {LABELS[r['system']]:<30} {r['rate']:6d} ev/s"
        + (f" (rep {r['rep']})" if reps > 1 else "")
        + f": received {r['received']}/{r['offered']}, "
        f"sustained {r['throughput']:.0f} ev/s; from scheduled p50 {ms(r['p50'])} "
        f"p99 {ms(r['p99'])} p99.9 {ms(r['p999'])} max {ms(r['max'])}; "
        f"from commit p50 {ms(r['c_p50'])} p99 {ms(r['c_p99'])}; writers late by up to "
        f"{r['writer_late_s'] * 1000:.0f} ms; load {r['loadavg']:.1f}; "
        f"CPU cores {cpu_cells(r)}"
        + ("" if r["kept_up"] else f"; saturated ({r['limit']})"))


class Sessions:
    """Runs each system in sessions on the servers of the run: the topics
    made once, a new slot for every session with --reps."""

    def __init__(self, a, srv, rates):
        self.a, self.srv, self.rates = a, srv, rates
        self.env = dict(os.environ)
        self.made = set()
        self.count = 0

    def run(self, system, rates_here, rep=1):
        """Starts the system afresh, warms it up, measures rates_here in order
        (stopping at the first not sustained), stops it and drops its slot."""
        self.srv.q("TRUNCATE outbox")
        if system == "poller-tuned":
            self.srv.run_file("poller_notify.sql")
        else:
            self.srv.q("DROP TRIGGER IF EXISTS outbox_poller_wake ON public.outbox")
        prefix = f"bench.lat.{system.replace('-', '_')}."
        topic = prefix + "order"
        if topic not in self.made:
            warm_topic(self.srv.brokers, topic, key="w")  # the consumer needs the topic
            self.made.add(topic)
        n = self.count if self.a.reps > 1 else 0
        self.count += 1
        handle = start_system(system, self.a, self.env, self.a.work, prefix, n)
        out = []
        try:
            if system.startswith("relay"):
                deadline = time.time() + 30
                while not self.srv.q1("SELECT coalesce(bool_or(active), false) "
                                      "FROM pg_replication_slots WHERE slot_name = %s",
                                      (lat_slot(system, n),)):
                    if time.time() > deadline:
                        sys.exit("relay did not start")
                    time.sleep(0.1)
            # Warm-up, not reported: first connections, topic metadata, JIT.
            loadgen(self.a, "warmup", min(self.rates), 3)
            time.sleep(2)
            for rate in rates_here:
                r = measure(self.a, system, topic, rate, rep, handle_pid(handle))
                out.append(r)
                log_rate(r, self.a.reps)
                if not r["kept_up"]:
                    break
        except RuntimeError as e:
            sys.exit(str(e))
        finally:
            stop_system(handle)
        self.srv.drop_slots()
        return out


def run_all(a, sessions, systems, rates):
    """Every system at every rate: one session a system, or with --reps
    interleaved repetitions (see above). Returns the result rows."""
    results = []
    if a.reps <= 1:
        for system in systems:
            results += sessions.run(system, rates)
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
                    rs = sessions.run(system, [rate], rep)
                    results += rs
                    if not rs[-1]["kept_up"]:
                        saturated.add(system)
    return results


def write_reports(a, rates, systems, results):
    if not a.from_json:
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


def main():
    a = parse_args()
    register_eos(a.systems.split(","), LABELS)
    register_debezium(a.systems.split(","))
    rates = sorted(int(r) for r in a.rates.split(","))
    if a.from_json:
        with open(a.from_json) as f:
            results = json.load(f)
        systems = [s for s in a.systems.split(",") if any(r["system"] == s for r in results)]
        write_reports(a, sorted({r["rate"] for r in results}), systems, results)
        return
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
    srv = Servers()
    if a.pin:
        with open(os.path.join(os.environ["OUTBOX_PG_DIR"], "data",
                               "postmaster.pid")) as f:
            n = pin_tree(int(f.readline()), PIN_DATABASE)
        log(f"pinned PostgreSQL ({n} processes) to CPU {PIN_DATABASE}")
        n = pin_tree(pid_from(os.path.join(os.environ["OUTBOX_KAFKA_DIR"], "pid")),
                     PIN_DELIVERY)
        log(f"pinned Kafka to CPU {PIN_DELIVERY}; writers on {PIN_DATABASE}, "
            f"the systems and the consumer on {PIN_DELIVERY}")
    srv.run_file("outbox.sql")
    srv.q("DROP PUBLICATION IF EXISTS bench_pub")
    srv.q("CREATE PUBLICATION bench_pub FOR TABLE public.outbox")
    srv.q("DROP PUBLICATION IF EXISTS bench_relay_lat")
    if any(eos_settings(s) for s in systems):
        # The relay reads it at start (a record with another key is ignored).
        warm_topic(srv.brokers, CHECKPOINT_TOPIC, key="w")
    sessions = Sessions(a, srv, rates)
    results = run_all(a, sessions, systems, rates)
    write_reports(a, rates, systems, results)


if __name__ == "__main__":
    main()
