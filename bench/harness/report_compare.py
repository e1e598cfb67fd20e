"""bench/RESULTS.md's comparisons on the drains of one run (bench/run.py):
outbox-relay with pgoutput against issue 12's targets, exactly-once
against at-least-once."""

import datetime
import statistics

from harness.report import MARKS, fmt, header, table
from harness.systems import PUBLICATION, RELAY_PUBLICATION, SYSTEMS, eos_settings


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
