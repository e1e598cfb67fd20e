"""The servers bench/run.sh started (scripts/pg.sh, scripts/kafka.sh; their
variables in the environment) and what the benchmarks ask PostgreSQL: SQL,
LSNs, the last COMMIT record before an LSN (pg_waldump)."""

import os
import subprocess

import psycopg

from harness import ROOT
from harness.procs import pid_from, proc_cpu, tree_cpu

PG_BIN = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
MIB = 1048576


def lsn_int(lsn):
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def lsn_str(v):
    return f"{v >> 32:X}/{v & 0xFFFFFFFF:X}"


class Servers:
    """The PostgreSQL and Kafka of this run: connection strings, their
    directories, a SQL connection (autocommit) and their CPU."""

    def __init__(self):
        self.conninfo = os.environ["OUTBOX_PG_CONNINFO"]
        self.brokers = os.environ["OUTBOX_KAFKA_BROKERS"]
        self.pg_dir = os.environ["OUTBOX_PG_DIR"]
        self.kafka_dir = os.environ["OUTBOX_KAFKA_DIR"]
        self.db = psycopg.connect(self.conninfo, autocommit=True)
        self.postmaster = pid_from(os.path.join(self.pg_dir, "data", "postmaster.pid"))

    def q(self, sql, params=None):
        cur = self.db.execute(sql, params)
        try:
            return cur.fetchall()
        except psycopg.ProgrammingError:
            return None

    def q1(self, sql, params=None):
        return self.q(sql, params)[0][0]

    def run_file(self, name):
        """Runs sql/NAME of the repository."""
        with open(os.path.join(ROOT, "sql", name)) as f:
            self.q(f.read())

    def wal_insert_lsn(self):
        return lsn_int(self.q1("SELECT pg_current_wal_insert_lsn()::text"))

    def drop_slots(self):
        for (slot,) in self.q("SELECT slot_name FROM pg_replication_slots"):
            self.q("SELECT pg_drop_replication_slot(%s)", (slot,))

    def pg_cpu(self):
        """CPU seconds of the whole PostgreSQL server (postmaster and children)."""
        return tree_cpu(self.postmaster)

    def kafka_cpu(self):
        try:
            return proc_cpu(int(open(os.path.join(self.kafka_dir, "pid")).read())) or 0.0
        except (FileNotFoundError, ValueError):
            return 0.0

    def last_commit_before(self, end):
        """The LSN of the last COMMIT record before end (pg_waldump over the
        cluster's pg_wal, looking back further until one is found)."""
        for window in (262144, 16 * MIB, 256 * MIB):
            p = subprocess.run(
                [f"{PG_BIN}/pg_waldump", "-p", os.path.join(self.pg_dir, "data", "pg_wal"),
                 "-s", lsn_str(max(end - window, 0)), "-e", lsn_str(end), "-r", "Transaction"],
                capture_output=True, text=True)
            commits = [lsn_int(l.split("lsn: ", 1)[1].split(",", 1)[0])
                       for l in p.stdout.splitlines() if "desc: COMMIT" in l]
            if commits:
                return commits[-1]
        raise RuntimeError(f"no COMMIT record found before {lsn_str(end)}: "
                           f"pg_waldump: {p.stderr.strip()[-300:]}")
