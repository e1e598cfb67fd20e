"""What every report shares: the sections of bench/RESULTS.md and how one
is replaced, medians and the summary of the drains, markdown tables, the
issue 5 targets, matplotlib when it is installed."""

import datetime
import os
import statistics

from harness import log
from harness.systems import SYSTEMS

MARKS = {"backlog": ("<!-- bench/run.sh: begin -->", "<!-- bench/run.sh: end -->"),
         "mixed": ("<!-- bench/run.sh mixed: begin -->", "<!-- bench/run.sh mixed: end -->"),
         "large": ("<!-- bench/run.sh large: begin -->", "<!-- bench/run.sh large: end -->"),
         "pgoutput": ("<!-- bench/run.sh pgoutput: begin -->",
                      "<!-- bench/run.sh pgoutput: end -->"),
         "eos": ("<!-- bench/run.sh eos: begin -->", "<!-- bench/run.sh eos: end -->")}
# Sections bench/latency.py writes: --sections may name them too.
LATENCY_SECTIONS = ("latency",)


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
    with open(path, "w") as f:
        f.write(text)


def pyplot(quiet=False):
    """matplotlib.pyplot (Agg), None when matplotlib is missing (said on
    stderr unless quiet)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if not quiet:
            log("matplotlib missing (pip install matplotlib): no plots")
        return None
    return plt


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


# The issue 5 targets that compare two systems: (key in TARGETS, name,
# (system, summary field) that must be at least factor times (system,
# field), how the ratio reads).
RATIO_TARGETS = [
    ("recv", "drain rate ≥ 0.8 × pg_recvlogical (wal2json)", ("relay", "rate"),
     ("recv-wal2json", "rate"), 0.8, "{:.2f}×"),
    ("poller-tuned", "drain rate ≥ 3 × outbox-poller (tuned)", ("relay", "rate"),
     ("poller-tuned", "rate"), 3, "{:.1f}×"),
    ("poller", "drain rate ≥ 3 × outbox-poller (default)", ("relay", "rate"),
     ("poller", "rate"), 3, "{:.1f}×"),
    ("debezium", "drain rate ≥ 2 × Debezium", ("relay", "rate"), ("debezium", "rate"), 2,
     "{:.1f}×"),
    ("cpu-debezium", "CPU per event ≤ Debezium / 10", ("debezium", "cpu_us"),
     ("relay", "cpu_us"), 10, "{:.1f}× less"),
    ("rss-debezium", "peak RSS ≤ Debezium / 10", ("debezium", "rss"), ("relay", "rss"), 10,
     "{:.1f}× smaller"),
]


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
    for key, name, (a, fa), (b, fb), factor, form in RATIO_TARGETS:
        # (row calls the lambda at once, in this iteration)
        row(key, name, lambda sh: (form.format(S(sh, a)[fa] / S(sh, b)[fb]),
                                   S(sh, a)[fa] >= factor * S(sh, b)[fb]))
    row("cpu", "CPU ≤ 2 µs/event",
        lambda sh: (f"{S(sh, 'relay')['cpu_us']:.2f} µs", S(sh, 'relay')['cpu_us'] <= 2))
    row("rss", "peak RSS ≤ 32 MiB",
        lambda sh: (f"{S(sh, 'relay')['rss']:.1f} MiB", S(sh, 'relay')['rss'] <= 32))
    return L


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
