"""The benchmark harness that bench/run.py (backlog drains, mixed WAL, large
transactions), bench/latency.py (steady-load latency) and bench/drain.sh's
summaries share:

- db.py: the servers run.sh started (PostgreSQL connection, LSNs, the WAL's
  last COMMIT by pg_waldump);
- kafka.py: topics and offsets through kcat;
- procs.py: processes: CPU, peak RSS, stopping them;
- systems.py: the systems measured (relays, pollers, pg_recvlogical,
  Debezium): names, labels and command lines;
- workloads.py: the backlogs and the mixed WAL written into PostgreSQL;
- scenarios.py: the drain suite (Bench: one drain, a shape for every
  system, the steady mixed load);
- report*.py: medians, markdown tables and plots, and the sections of
  bench/RESULTS.md (report.py the shared part; report_drain, report_mixed,
  report_compare for run.py, report_latency for latency.py);
- drain_summary.py: the tables bench/drain.sh and bench/message_outbox.sh
  print (python3 -m harness.drain_summary).
"""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
