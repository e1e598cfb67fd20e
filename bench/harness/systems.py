"""The systems the benchmarks measure: their names and labels, and the
command lines that start them (outbox-relay, outbox-poller, Debezium
through bench/debezium.sh; pg_recvlogical is bench/run.py's alone)."""

import os
import re
import subprocess

from harness import ROOT

# name -> (label, kind): bench/run.py's drains.
SYSTEMS = {
    "relay": ("outbox-relay", "cdc"),
    "relay-pgoutput": ("outbox-relay (pgoutput)", "cdc"),
    "debezium": ("Debezium 3.2 (Kafka Connect)", "cdc"),
    "recv-wal2json": ("pg_recvlogical wal2json", "recv"),
    "recv-pgoutput": ("pg_recvlogical pgoutput", "recv"),
    "poller": ("outbox-poller (default)", "poll"),
    "poller-tuned": ("outbox-poller (tuned)", "poll"),
    "relay-eos": ("outbox-relay (exactly-once)", "cdc"),
}
# name -> label: bench/latency.py's steady load.
LABELS = {"relay": "outbox-relay", "relay-pgoutput": "outbox-relay (pgoutput)",
          "relay-eos": "outbox-relay (exactly-once)",
          "poller": "outbox-poller (default)",
          "poller-tuned": "outbox-poller (tuned: notify)",
          "debezium": "Debezium (Kafka Connect, bench/debezium's version)"}
# relay-eos-<N>ms: exactly-once with kafka.transaction.max_ms=N (the default
# is 100); registered by register_eos() when named in --systems.
EOS_RE = re.compile(r"relay-eos(?:-([0-9]+)ms)?$")
# debezium-X.Y.Z: that Debezium release (X.Y.Z.Final) beside the pom's.
DEBEZIUM_RE = re.compile(r"^debezium-(\d+\.\d+\.\d+)$")
WAL2JSON_OPTS = ["format-version=2", "include-transaction=true",
                 "include-lsn=true", "include-xids=true",
                 "include-timestamp=true", "add-tables=public.outbox",
                 "actions=insert"]
# The publications: pg_recvlogical's and Debezium's (every action), and the
# one outbox-relay with pgoutput streams, as the relay itself would create
# it. Both exist before any backlog is written: pgoutput looks a publication
# up in the catalog as of the WAL it decodes.
PUBLICATION = "bench_pub"
RELAY_PUBLICATION = "bench_relay_pub"


def eos_settings(system):
    """The relay settings (--set key=value) an exactly-once variant adds,
    [] for any other system."""
    m = EOS_RE.match(system)
    if not m:
        return []
    return ["kafka.exactly_once=true"] + (
        [f"kafka.transaction.max_ms={m.group(1)}"] if m.group(1) else [])


def eos_label(system):
    m = EOS_RE.match(system)
    return ("outbox-relay (exactly-once" +
            (f", transaction.max_ms {m.group(1)}" if m.group(1) else "") + ")")


def register_eos(systems, table, kind=None):
    """Adds every relay-eos-<N>ms named in systems to table (SYSTEMS or
    LABELS)."""
    for s in systems:
        if EOS_RE.match(s) and s not in table:
            table[s] = eos_label(s) if kind is None else (eos_label(s), kind)


def debezium_version(system):
    """The Debezium release a debezium-X.Y.Z system runs; None for the pom's."""
    m = DEBEZIUM_RE.match(system)
    return f"{m.group(1)}.Final" if m else None


def register_debezium(systems):
    for s in systems:
        if DEBEZIUM_RE.match(s) and s not in LABELS:
            LABELS[s] = f"Debezium {debezium_version(s)} (Kafka Connect)"


def program_command(bin_dir, system, conninfo, brokers, topic_prefix):
    """outbox-relay's or outbox-poller's command line for a relay* or
    poller* system: its servers, topics bench-owned, no progress log, no
    HTTP listener."""
    binary = "outbox-relay" if system.startswith("relay") else "outbox-poller"
    return [os.path.join(bin_dir, binary), "--pg", conninfo,
            "--kafka", brokers, "--topic", topic_prefix + "{aggregatetype}",
            "--set", "log.progress_interval_s=0", "--set", "http.listen="]


def relay_env_sets():
    """Extra settings for every relay, e.g. to measure a trade-off:
    OUTBOX_BENCH_RELAY_SET="kafka.send_when_idle=false"."""
    cmd = []
    for kv in os.environ.get("OUTBOX_BENCH_RELAY_SET", "").split():
        cmd += ["--set", kv]
    return cmd


def eos_sets(system):
    """eos_settings as --set arguments."""
    cmd = []
    for kv in eos_settings(system):
        cmd += ["--set", kv]
    return cmd


def debezium(command, ddir, env=None, **run_args):
    """bench/debezium.sh COMMAND DDIR (start or stop), checked."""
    return subprocess.run([os.path.join(ROOT, "bench", "debezium.sh"), command, ddir],
                          env=env, check=True, **run_args)
