"""bench/RESULTS.md's mixed-WAL section (bench/run.py): the drain on a WAL
where outbox rows are a small share, the steady load and the WAL its slot
holds, and that plot."""

import os

from harness.db import MIB
from harness.report import MARKS, drain_rows, fmt, header, pyplot, table, targets
from harness.systems import SYSTEMS
from harness.workloads import MIXED_ROWS


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


def plot_retention(bench, outdir):
    plt = pyplot()
    if plt is None:
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
