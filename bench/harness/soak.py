"""bench/soak.sh's sampler and summary (python3 -m harness.soak ...).

  sample --pid PID --slot SLOT --out CSV [--http HOST:PORT] [--every S]
      Until PID exits (or SIGTERM): every S seconds (default 5) one CSV line
      of the relay's RSS and peak RSS (KiB), CPU seconds (utime+stime, every
      thread), open file descriptors and threads (/proc/PID), the slot's lag
      (pg_current_wal_lsn - confirmed_flush_lsn, bytes; empty while
      PostgreSQL is away) and whether it is active, and, with --http, the
      relay's own figures from /metrics (empty while it does not answer).
      PostgreSQL is asked through psql (PG* in the environment), with a
      short connect timeout, so a restart costs one empty cell.

  summary --dir DIR --warmup S [--json]
      Reads DIR/samples.csv, DIR/faults.csv, DIR/audit.json, DIR/loadgen.json
      and DIR/status (soak.sh's files) and prints the run's summary: events,
      faults of each kind, missing, duplicates, order violations, RSS at
      start (the first sample after S seconds of warm-up), end and max, fds
      at start and end, and their growth (least-squares slope over the
      samples after warm-up, per hour), then a line per fault: its kind,
      nodes, how long it took, the slot's largest lag from its start to
      the next fault's (or the end), and how long after the fault's end the
      slot's lag was first under 1 MiB again (caught up; none when it was
      not before the next fault). --json prints it as one object.
"""

import argparse
import calendar
import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from harness.procs import CLK_TCK, _stat

# The relay's /metrics series sampled (summed over their labels).
METRICS = {
    "events_delivered": "outbox_relay_events_delivered_total",
    "delivery_errors": "outbox_relay_delivery_errors_total",
    "lag_bytes": "outbox_relay_lag_bytes",
    "lag_seconds": "outbox_relay_lag_seconds",
    "inflight_events": "outbox_relay_inflight_events",
    "tracked_events": "outbox_relay_tracked_events",
    "kafka_blocked": "outbox_relay_kafka_blocked",
    "reconnects": "outbox_relay_reconnects_total",
    "ready": "outbox_relay_ready",
}
# A fault's end is caught up once the slot lags less than this again.
CAUGHT_UP_BYTES = 1 << 20
PROC = ["rss_kib", "hwm_kib", "cpu_s", "fds", "threads"]
COLUMNS = (["time", "elapsed_s"] + PROC + ["slot_lag_bytes", "slot_active"]
           + list(METRICS))


def proc_sample(pid):
    """RSS, HWM (KiB), CPU seconds, fds, threads of pid; None if gone."""
    f = _stat(pid)
    if f is None:
        return None
    out = {"cpu_s": round((int(f[11]) + int(f[12])) / CLK_TCK, 2)}
    try:
        with open(f"/proc/{pid}/status") as s:
            for line in s:
                k, _, v = line.partition(":")
                if k == "VmRSS":
                    out["rss_kib"] = int(v.split()[0])
                elif k == "VmHWM":
                    out["hwm_kib"] = int(v.split()[0])
                elif k == "Threads":
                    out["threads"] = int(v)
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    return out


def slot_sample(slot):
    """The slot's lag in bytes and whether it is active; empty cells when
    PostgreSQL does not answer."""
    sql = ("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint,"
           f" active FROM pg_replication_slots WHERE slot_name = '{slot}'")
    try:
        p = subprocess.run(["psql", "-qAtX", "-F", ",", "-c", sql], capture_output=True,
                           text=True, timeout=10,
                           env=dict(os.environ, PGCONNECT_TIMEOUT="3"))
    except subprocess.TimeoutExpired:
        return {}
    if p.returncode != 0 or "," not in p.stdout:
        return {}
    lag, active = p.stdout.strip().split(",")
    return {"slot_lag_bytes": lag, "slot_active": 1 if active == "t" else 0}


def metrics_sample(http):
    """The METRICS series from the relay's /metrics, each summed over its
    labels; {} when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{http}/metrics", timeout=3) as r:
            text = r.read().decode()
    except (OSError, ValueError):
        return {}
    names = {v: k for k, v in METRICS.items()}
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in names:
            try:
                v = float(line.rsplit(" ", 1)[1])
            except ValueError:
                continue
            out[names[name]] = out.get(names[name], 0) + v
    return {k: (int(v) if v == int(v) else round(v, 3)) for k, v in out.items()}


def sample(a):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    t0 = time.time()
    new = not os.path.exists(a.out) or os.path.getsize(a.out) == 0
    with open(a.out, "a", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        if new:
            w.writeheader()
        while not stop:
            t = time.time()
            p = proc_sample(a.pid)
            if p is None:
                break
            row = {"time": round(t, 1), "elapsed_s": round(t - t0, 1), **p,
                   **slot_sample(a.slot)}
            if a.http:
                row.update(metrics_sample(a.http))
            w.writerow(row)
            f.flush()
            while not stop and time.time() < t + a.every:
                time.sleep(0.2)


def slope_per_hour(xs, ys):
    """Least-squares slope of ys over xs (seconds), per hour; 0 if too few."""
    n = len(xs)
    if n < 3:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx * 3600


def read_json(path):
    try:
        with open(path) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return {}


def summarize(d, warmup):
    rows = []
    with open(os.path.join(d, "samples.csv")) as f:
        for r in csv.DictReader(f):
            if r["rss_kib"]:
                rows.append(r)
    faults = []
    if os.path.exists(os.path.join(d, "faults.csv")):
        with open(os.path.join(d, "faults.csv")) as f:
            faults = list(csv.DictReader(f))
    audit = read_json(os.path.join(d, "audit.json"))
    load = read_json(os.path.join(d, "loadgen.json"))
    status = {}
    if os.path.exists(os.path.join(d, "status")):
        with open(os.path.join(d, "status")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                status[k] = v
    steady = [r for r in rows if float(r["elapsed_s"]) >= warmup] or rows
    s = {"duration_s": round(float(rows[-1]["elapsed_s"]), 1) if rows else 0,
         "samples": len(rows)}
    kinds = {}
    for fl in faults:
        kinds[fl["kind"]] = kinds.get(fl["kind"], 0) + 1
    s["faults"] = len(faults)
    s["faults_by_kind"] = dict(sorted(kinds.items()))
    s["offered"] = load.get("events")
    s["committed"] = load.get("committed")
    s["rolled_back"] = load.get("rolled_back")
    s["writer_errors"] = load.get("errors")
    s["writer_reconnects"] = load.get("reconnects")
    s["writer_late_max_ms"] = load.get("late_max_ms")
    for k in ("committed", "records", "delivered", "missing", "duplicates", "unknown",
              "misrouted", "order_violations"):
        s["audit_" + k] = audit.get(k)
    if steady:
        rss = [int(r["rss_kib"]) for r in steady]
        fds = [int(r["fds"]) for r in steady]
        xs = [float(r["elapsed_s"]) for r in steady]
        s.update(rss_start_kib=rss[0], rss_end_kib=rss[-1], rss_max_kib=max(rss),
                 rss_slope_kib_per_h=round(slope_per_hour(xs, rss), 1),
                 fds_start=fds[0], fds_end=fds[-1], fds_max=max(fds),
                 fds_slope_per_h=round(slope_per_hour(xs, fds), 2),
                 threads_start=int(steady[0]["threads"]), threads_end=int(steady[-1]["threads"]),
                 hwm_kib=int(rows[-1]["hwm_kib"]))
        cpu = float(rows[-1]["cpu_s"])
        s["cpu_s"] = cpu
        s["cpu_cores_avg"] = round(cpu / max(float(rows[-1]["elapsed_s"]), 1), 3)
        lags = [int(r["slot_lag_bytes"]) for r in steady if r["slot_lag_bytes"]]
        if lags:
            s["slot_lag_max_bytes"] = max(lags)
            s["slot_lag_median_bytes"] = sorted(lags)[len(lags) // 2]
    s.update(status)
    # Each fault's window: from its start to the next one's.
    t_first = float(rows[0]["time"]) - float(rows[0]["elapsed_s"]) if rows else 0
    per = []
    for i, fl in enumerate(faults):
        a = t_first + float(fl["elapsed_s"])
        b = (t_first + float(faults[i + 1]["elapsed_s"]) if i + 1 < len(faults)
             else float("inf"))
        took = iso_s(fl["end_utc"]) - iso_s(fl["start_utc"])
        window = [(float(r["time"]), int(r["slot_lag_bytes"])) for r in rows
                  if a <= float(r["time"]) < b and r["slot_lag_bytes"]]
        caught = [t for t, lag in window if t >= a + took and lag < CAUGHT_UP_BYTES]
        per.append({"at_s": int(float(fl["elapsed_s"])), "kind": fl["kind"],
                    "nodes": fl["nodes"], "took_s": took,
                    "max_slot_lag_bytes": max(lag for _, lag in window) if window else None,
                    "caught_up_s": round(caught[0] - (a + took)) if caught else None,
                    "detail": fl["detail"]})
    s["fault_list"] = per
    return s


def iso_s(t):
    """Seconds since the epoch of a UTC time like 2026-11-27T12:15:00Z."""
    return calendar.timegm(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ"))


def summary(a):
    s = summarize(a.dir, a.warmup)
    if a.json:
        print(json.dumps(s))
        return
    per = s.pop("fault_list")
    w = max(len(k) for k in s)
    for k, v in s.items():
        if isinstance(v, dict):
            v = ", ".join(f"{kk} {vv}" for kk, vv in v.items()) or "none"
        print(f"{k:<{w}}  {v}")
    for f in per:
        print(f"fault at {f['at_s']:>5} s  {f['kind']:<16} nodes {f['nodes']:<6} took {f['took_s']:>4} s"
              f"  max slot lag {f['max_slot_lag_bytes']} B  caught up {f['caught_up_s']} s after"
              f"  {f['detail']}")


def main(argv):
    ap = argparse.ArgumentParser(prog="harness.soak")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("sample")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--slot", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--http", default="")
    p.add_argument("--every", type=float, default=5)
    p = sub.add_parser("summary")
    p.add_argument("--dir", required=True)
    p.add_argument("--warmup", type=float, default=60)
    p.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    {"sample": sample, "summary": summary}[a.cmd](a)


if __name__ == "__main__":
    main(sys.argv[1:])
