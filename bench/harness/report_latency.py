"""bench/RESULTS.md's steady-load sections (bench/latency.py): every system's
latency and saturation, exactly-once against at-least-once, the p99 plot."""

import os
import statistics
import time

from harness.report import pyplot
from harness.systems import LABELS, eos_settings

BEGIN_MARK = "<!-- bench/latency: begin -->"
END_MARK = "<!-- bench/latency: end -->"
KEEP_UP = 0.95  # sustained / offered below this: saturated
EOS_MARKS = ("<!-- bench/latency eos: begin -->", "<!-- bench/latency eos: end -->")
CPU_KEYS = ("cpu_system", "cpu_pg", "cpu_kafka", "cpu_bench", "cpu_machine")
CPU_HEADER = "CPU cores: system / PostgreSQL / Kafka / writers+consumer / machine"


def cpu_cells(r, get=lambda r, k: r.get(k)):
    return " / ".join("–" if get(r, k) is None else f"{get(r, k):.2f}" for k in CPU_KEYS)


def measured(rates, shown, results):
    """(rate, system, its rows) for each rate and shown system measured."""
    for rate in rates:
        for s in shown:
            rs = [r for r in results if r["system"] == s and r["rate"] == rate]
            if rs:
                yield rate, s, rs


def decomposition(rates, shown, results):
    """Where the time from commit goes, per rate and system (medians over
    the repetitions), and the broker's side of it: markdown lines."""
    f = lambda v: "–" if v is None else f"{v:.1f}"
    med = lambda rs, k: (statistics.median([r[k] for r in rs if r.get(k) is not None])
                         if any(r.get(k) is not None for r in rs) else None)
    L = []
    L.append("Where the time from commit goes. *received*: the relay reading the event's "
             "transaction from the replication stream; *reported*: librdkafka's delivery "
             "report; both from the relay's own histograms "
             "(`outbox_relay_receive_latency_seconds`, `outbox_relay_delivery_latency_seconds`, "
             "scraped before and after each measurement, interpolated inside their buckets: "
             "1, 2.5, 5, 10, 25 ms ..., so a value is within its bucket, not exact). "
             "*stamped*: each record's Kafka timestamp (millisecond resolution, so values "
             "under 1 ms read as 0 or -1). For the relays it is the produce call (the "
             "harness runs them with outbox.timestamp=produce), so it fills *produced*. "
             "The poller's records carry librdkafka's stamp at its produce call, which "
             "follows the read of its batch within the batch's routing, so it fills "
             "*produced* and stands for *received* too. Debezium's carry the outbox "
             "EventRouter's timestamp, the change event's `ts_ms`: when Debezium built "
             "the event from the replication stream, so it fills *received*; its produce "
             "follows after Debezium's queue (`poll.interval.ms`) and Connect's producer, "
             "inside *stamped → arrived*. *arrived*: the consumer's clock (the table "
             "above). For exactly-once the time from produce to arrival includes the wait "
             "for the transaction's commit (the rest of `transaction.max_ms`, the flush, "
             "the checkpoint and the EndTxn round trip) before a read_committed fetch "
             "returns it. Medians over the repetitions of each measurement's p50 and p99; "
             "– where a system has no such figure.")
    L.append("")
    L.append("| offered ev/s | system | commit → received p50 / p99 ms | commit → produced "
             "p50 / p99 ms | commit → reported p50 / p99 ms | commit → arrived p50 / p99 ms "
             "| stamped → arrived p50 / p99 ms |")
    L.append("| --- | --- | --- | --- | --- | --- | --- |")
    for rate, s, rs in measured(rates, shown, results):
        pair = lambda k: f"{f(med(rs, k + '_p50'))} / {f(med(rs, k + '_p99'))}"
        stamp = pair("produce")
        received, produced = ((stamp, "– / –") if s.startswith("debezium")
                              else (pair("received"), stamp))
        L.append(f"| {rate} | {LABELS[s]} | {received} | {produced} | "
                 f"{pair('reported')} | {f(med(rs, 'c_p50'))} / {f(med(rs, 'c_p99'))} | "
                 f"{pair('arrive')} |")
    L.append("")
    if any(r.get("broker_produce_ms") is not None or r.get("gc_pauses") is not None
           for r in results):
        L.append("The broker during each measurement: its mean produce and fetch request "
                 "times (Kafka's `RequestMetrics` `TotalTimeMs` through JMX, read before and "
                 "after; a fetch's includes its long poll, so an idle consumer's is "
                 "`fetch.wait.max.ms`), the p99 of produce from Kafka's reservoir (weighted "
                 "to the last minutes, so earlier measurements count too), and its GC "
                 "pauses from the load's start to the last arrival (its GC log). Medians "
                 "over the repetitions.")
        L.append("")
        L.append("| offered ev/s | system | broker produce mean ms | produce p99 ms (recent) "
                 "| fetch mean ms | GC pauses | GC pause total / longest ms |")
        L.append("| --- | --- | --- | --- | --- | --- | --- |")
        for rate, s, rs in measured(rates, shown, results):
            L.append(f"| {rate} | {LABELS[s]} | {f(med(rs, 'broker_produce_ms'))} | "
                     f"{f(med(rs, 'broker_produce_p99_ms'))} | "
                     f"{f(med(rs, 'broker_fetch_ms'))} | {f(med(rs, 'gc_pauses'))} | "
                     f"{f(med(rs, 'gc_ms'))} / {f(med(rs, 'gc_max_ms'))} |")
        L.append("")
    return L


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
    L += decomposition(rates, shown, results)
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
    plt = pyplot(quiet=True)
    if plt is None:
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
    return [path, plot_percentiles(plt, a, results)]


def plot_percentiles(plt, a, results):
    """p50, p99 and p99.9 from commit against the offered rate, one panel
    each, a line per system: the median of the repetitions at each rate."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.5), sharey=True)
    for ax, key, name in zip(axes, ("c_p50", "c_p99", "c_p999"), ("p50", "p99", "p99.9")):
        for s in LABELS:
            rates = sorted({r["rate"] for r in results
                            if r["system"] == s and r["received"] and r.get(key) is not None})
            if not rates:
                continue
            ys = [statistics.median(r[key] for r in results
                                    if r["system"] == s and r["rate"] == rate
                                    and r["received"] and r.get(key) is not None)
                  for rate in rates]
            ax.plot(rates, ys, marker="o", label=LABELS[s])
        ax.set_xscale("log")
        ax.set_yscale("log")
        # The measured rates as plain numbers, no minor labels.
        ax.set_xticks(sorted({r["rate"] for r in results}))
        ax.set_xticklabels([str(x) for x in sorted({r["rate"] for r in results})],
                           fontsize=8)
        ax.minorticks_off()
        ax.set_title(f"{name} from commit", fontsize=10)
        ax.set_xlabel(f"offered events/s ({a.per_txn} per transaction)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency from commit (ms)")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(a.plots, "latency_percentiles.png")
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
             "alone. Producer defaults of each system (outbox-relay: linger.ms=20 and "
             "kafka.send_when_idle, the "
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
    L += decomposition(rates, [s for s in LABELS if any(r["system"] == s for r in results)],
                       results)
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
        L.append("Plots: " + ", ".join(f"[{os.path.basename(p)}](plots/{os.path.basename(p)})"
                                       for p in plotfile) + ".")
        L.append("")
    L.append(END_MARK)
    return "\n".join(L) + "\n"
