"""bench/RESULTS.md's backlog and large-transaction sections (bench/run.py)
and the backlog's plots."""

import datetime
import os

from harness.db import MIB
from harness.report import MARKS, drain_rows, fmt, header, pyplot, table, targets
from harness.systems import PUBLICATION, RELAY_PUBLICATION, SYSTEMS


def report_backlog(args, bench, summary, plots):
    shapes = args.per_txn
    systems = [s for s in SYSTEMS if any((sh, s) in summary for sh in shapes)]
    L = []
    begin, end = MARKS["backlog"]
    L.append(begin)
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
             "2 MiB by default, with 512 bytes per record counted) bound its memory although it confirms nothing until the "
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


def make_plots(args, summary, outdir):
    plt = pyplot()
    if plt is None:
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
