"""The tables the shell benchmarks print from their per-run lines:

  python3 -m harness.drain_summary medians EVENTS < RESULTS
      bench/drain.sh: lines "NAME seconds cpu_s peak_rss_kib
      peak_private_rss_kib [broker_cpu_s]" (the private one: RssAnon,
      sampled; NAME PLUGIN/SYSTEM; cpu 0 for pg_recvlogical); medians per
      NAME and the relay's ratios to pg_recvlogical on the same plugin.
  python3 -m harness.drain_summary stages FILE PLUGIN...
      bench/drain.sh --stages: "PLUGIN STAGE ... cpu_us_per_event=X" lines
      (bench/stage_cost.cc's, and the relay's whole drain); a markdown
      table of medians, a column per plugin.
  python3 -m harness.drain_summary outbox-kinds EVENTS KIND=WAL_BYTES... < RESULTS
      bench/message_outbox.sh: lines "KIND PLUGIN seconds cpu_s"; drain
      rate and CPU per event of each kind of outbox, a column per plugin.
"""

import collections
import statistics
import sys


def medians(lines, ev):
    by = collections.defaultdict(list)
    for l in lines:
        if l.strip():
            by[l.split()[0]].append(list(map(float, l.split()[1:])))
    med = {n: [statistics.median(c) for c in zip(*rows)] for n, rows in by.items()}
    print(f"\nmedians of {len(next(iter(by.values())))} run(s), {int(ev)} events:")
    for n, m in med.items():
        secs, cpu = m[0], m[1]
        broker = m[4] if len(m) > 4 else 0
        p = n.split("/")[0]
        line = f"{n}: {secs:.2f} s ({ev/secs:.0f} ev/s)"
        if cpu > 0:
            ratios = ", ".join(f"{med[c][0]/secs:.2f}x {c.split(chr(47))[1]}"
                               for c in (p + "/pg_recvlogical", p + "/pg_recvlogical-binary")
                               if c in med)
            line += (f", {ratios}, relay cpu {cpu*1e6/ev:.2f} us/event, "
                     f"peak RSS max {max(r[2] for r in by[n])/1024:.1f} MiB, "
                     f"private (anonymous) {max(r[3] for r in by[n])/1024:.1f} MiB")
            if broker > 0:
                line += f", broker cpu {broker*1e6/ev:.2f} us/event"
        print(line)


def stages(path, plugins):
    cost = collections.defaultdict(list)
    for line in open(path):
        f = line.split()
        if len(f) > 2 and "=" in line:
            cost[(f[0], f[1])].append(
                float(dict(kv.split("=") for kv in f[2:])["cpu_us_per_event"]))
    m = {k: statistics.median(v) for k, v in cost.items()}
    rows = [
        ("receive: the relay's libpq stream, messages dropped", "recv"),
        ("receive + decode (wal2json: simdjson; pgoutput: binary)", "recv+decode"),
        ("receive + decode + route (Record built)", "recv+decode+route"),
        ("produce: the relay's Kafka sink, same records, header `id`", "produce"),
        ("produce without the header", "produce-no-header"),
    ]
    get = lambda p, k: m.get((p, k), m.get(("any", k)))
    cell = lambda v: "–" if v is None else f"{v:.2f}"
    print("\n| stage, measured alone (CPU µs/event, median) | " + " | ".join(plugins) + " |")
    print("| --- | " + " | ".join("---" for _ in plugins) + " |")
    for label, key in rows:
        print(f"| {label} | " + " | ".join(cell(get(p, key)) for p in plugins) + " |")

    def total(p):
        a, b = get(p, "recv+decode+route"), get(p, "produce")
        return None if a is None or b is None else a + b
    print("| sum: receive + decode + route + produce | "
          + " | ".join(cell(total(p)) for p in plugins) + " |")
    print("| outbox-relay, the whole drain | "
          + " | ".join(cell(get(p, "relay")) for p in plugins) + " |")


def outbox_kinds(lines, ev, wal):
    by = collections.defaultdict(list)
    for l in lines:
        if l.strip():
            f = l.split()
            by[(f[0], f[1])].append((float(f[2]), float(f[3])))
    plugins = sorted({p for _, p in by}, key=lambda p: p != "wal2json")
    print("\n| outbox | WAL bytes/event | " + " | ".join(f"drain ev/s, {p}" for p in plugins) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in plugins) + " |")
    for w in ("table", "nojanitor", "message"):
        cells = []
        for p in plugins:
            rows = by[(w, p)]
            secs = statistics.median(r[0] for r in rows)
            cpu = statistics.median(r[1] for r in rows)
            cells.append(f"{ev/secs/1000:.1f}k ({cpu*1e6/ev:.2f} µs CPU)")
        print(f"| {w} | {int(wal[w])/ev:.0f} | " + " | ".join(cells) + " |")


def main(argv):
    if len(argv) >= 2 and argv[0] == "medians":
        medians(sys.stdin, float(argv[1]))
    elif len(argv) >= 2 and argv[0] == "stages":
        stages(argv[1], argv[2:])
    elif len(argv) >= 2 and argv[0] == "outbox-kinds":
        outbox_kinds(sys.stdin, float(argv[1]), dict(a.split("=") for a in argv[2:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
