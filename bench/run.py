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

This file is the command line; the harness is bench/harness/ (servers,
Kafka, processes, workloads, the scenarios in scenarios.py, the reports).
"""

import argparse
import json
import os
import sys

from harness import ROOT, log
from harness.report import LATENCY_SECTIONS, MARKS, summarize, write_section
from harness.report_compare import report_eos, report_pgoutput
from harness.report_drain import make_plots, report_backlog, report_large
from harness.report_mixed import plot_retention, report_mixed
from harness.scenarios import Bench
from harness.systems import SYSTEMS, eos_settings, register_eos
from harness.workloads import MIXED_ROWS

SCENARIOS = ("backlog", "mixed", "large")


def parse_args():
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
    return args


def check_args(args):
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


def write_reports(args, bench):
    """The sections of --results (and plots) this run measured and
    --sections names."""
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(dict(drains=bench.results, steady=bench.steady_results), f, indent=1)
    summary = summarize(bench.results)
    written = []
    want = lambda section: section in args.sections
    if "backlog" in args.scenarios and want("backlog"):
        plots = make_plots(args, summary, args.plots)
        write_section(args.results, report_backlog(args, bench, summary, plots), MARKS["backlog"])
        written += plots
    if "mixed" in args.scenarios and want("mixed"):
        plots = plot_retention(bench, args.plots) if bench.steady_results else []
        write_section(args.results, report_mixed(args, bench, summary, plots), MARKS["mixed"])
        written += plots
    if "large" in args.scenarios and want("large"):
        write_section(args.results, report_large(args, bench, summary), MARKS["large"])
    if "relay-pgoutput" in args.systems and want("pgoutput"):
        write_section(args.results, report_pgoutput(args, summary), MARKS["pgoutput"])
    if any(eos_settings(s) for s in args.systems) and want("eos"):
        write_section(args.results, report_eos(args, bench, summary), MARKS["eos"])
    log(f"wrote {args.results}" + (f" and {len(written)} plots in {args.plots}" if written else ""))


def main():
    args = parse_args()
    check_args(args)
    bench = Bench(args)
    bench.run()
    write_reports(args, bench)


if __name__ == "__main__":
    main()
