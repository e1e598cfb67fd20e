"""The drain suite (bench/run.py): each transaction shape's backlog drained
by every system in turn, and the steady mixed load. Bench.run() runs the
scenarios --scenarios names; the results are dicts in Bench.results (one a
drain), Bench.steady_results and Bench.writes (seconds, WAL bytes of each
shape's backlog)."""

import os
import subprocess
import threading
import time

import psycopg

from harness import kafka, log, workloads
from harness.db import MIB, PG_BIN, Servers, lsn_int, lsn_str
from harness.procs import proc_cpu, proc_hwm_kib, stop_process
from harness.report import fmt
from harness.systems import (PUBLICATION, RELAY_PUBLICATION, SYSTEMS, WAL2JSON_OPTS, debezium,
                             eos_sets, eos_settings, program_command, relay_env_sets)
from harness.workloads import MIXED_ROWS, mixed_every


class Bench:
    def __init__(self, args):
        self.a = args
        self.srv = Servers()
        self.work = args.work
        self.results = []  # dicts

    def start(self, system, tag, slot, logf, endpos=None):
        """Starts a system writing to topics bench.<tag>.*; returns (child
        Popen or None, pid, Debezium dir or None)."""
        topic_prefix = f"bench.{tag}."
        if system in ("relay", "relay-pgoutput", "poller", "poller-tuned") or eos_settings(system):
            cmd = program_command(self.a.bin, system, self.srv.conninfo, self.srv.brokers,
                                  topic_prefix)
            if system.startswith("relay"):
                cmd += ["--slot", slot, "--set", "postgres.create_slot=false",
                        # Slot markers in the work directory, not the user's.
                        "--set", f"postgres.state_dir={os.path.join(self.work, 'state')}"]
                cmd += relay_env_sets() + eos_sets(system)
            if system == "relay-pgoutput":
                cmd += ["--set", "postgres.plugin=pgoutput",
                        "--set", f"postgres.publication={RELAY_PUBLICATION}"]
            if system == "poller-tuned":
                cmd += ["--set", f"poller.batch_size={self.a.poller_batch}",
                        "--set", "poller.notify=true",
                        "--set", f"poller.interval_ms={self.a.poller_interval}"]
            child = subprocess.Popen(cmd, stdout=logf, stderr=logf)
            return child, child.pid, None
        if system == "debezium":
            env = dict(os.environ, DEBEZIUM_WAIT="0", DEBEZIUM_SLOT=slot,
                       DEBEZIUM_PUBLICATION=PUBLICATION,
                       DEBEZIUM_TOPIC=topic_prefix + "${routedByValue}")
            ddir = os.path.join(self.work, f"dbz_{tag}")
            out = debezium("start", ddir, env, capture_output=True, text=True).stdout
            pid = int([l for l in out.splitlines() if l.startswith("DEBEZIUM_PID=")][0].split("=")[1])
            return None, pid, ddir
        # pg_recvlogical
        cmd = [f"{PG_BIN}/pg_recvlogical", "-d", self.srv.conninfo, "--slot", slot,
               "--start", "--endpos", lsn_str(endpos), "-f", "/dev/null"]
        if system == "recv-wal2json":
            cmd += sum((["-o", o] for o in WAL2JSON_OPTS), [])
        else:
            cmd += ["-o", "proto_version=1", "-o", f"publication_names={PUBLICATION}"]
        child = subprocess.Popen(cmd, stdout=logf, stderr=logf)
        return child, child.pid, None

    def stop(self, child, ddir):
        if ddir is not None:
            debezium("stop", ddir)
        elif child is not None:
            stop_process(child)

    def drain(self, system, shape, run, last_commit, n=None):
        n = n or self.a.events
        tag = f"{system.replace('-', '_')}_{shape}_{run}"
        topic_prefix = f"bench.{tag}."
        kind = SYSTEMS[system][1]
        slot = tag
        logf = open(os.path.join(self.work, f"{tag}.log"), "w")
        if kind != "recv":
            kafka.warm_topic(self.srv.brokers, topic_prefix + "order")
            kafka.warm_topic(self.srv.brokers, topic_prefix + "sentinel")
        eos = bool(eos_settings(system))
        cp0 = kafka.end_offsets(self.srv.brokers, kafka.CHECKPOINT_TOPIC) if eos else None
        load1 = os.getloadavg()[0]  # the machine is shared: say how busy it was
        wal0 = self.srv.wal_insert_lsn()
        pg0, k0 = self.srv.pg_cpu(), self.srv.kafka_cpu()
        t0 = time.monotonic()
        t_active = None
        child, pid, ddir = self.start(system, tag, slot, logf, last_commit)
        hwm = 0
        cpu = 0.0
        rusage = None
        deadline = t0 + self.a.timeout
        while True:
            now = time.monotonic()
            if kind == "recv":
                # VmHWM from /proc: wait4's ru_maxrss would count the
                # Python process the child was forked from.
                hwm = max(hwm, proc_hwm_kib(pid))
                r = os.wait4(pid, os.WNOHANG)
                if r[0] == pid:
                    rusage = r[2]
                    break
            else:
                c = proc_cpu(pid)
                if c is None or (child is not None and child.poll() is not None):
                    raise RuntimeError(f"{system} exited early, see {logf.name}")
                cpu = c
                hwm = max(hwm, proc_hwm_kib(pid))
                if kind == "cdc":
                    row = self.srv.q("SELECT active, confirmed_flush_lsn::text FROM pg_replication_slots "
                                 "WHERE slot_name = %s", (slot,))
                    if row and row[0][0] and t_active is None:
                        t_active = now - t0
                    if row and row[0][1] and lsn_int(row[0][1]) >= last_commit:
                        break
                else:
                    if self.srv.q1("SELECT NOT EXISTS (SELECT 1 FROM outbox WHERE sent_at IS NULL "
                               "AND dead_lettered_at IS NULL)"):
                        break
            if now > deadline:
                raise RuntimeError(f"{system} did not finish in {self.a.timeout} s, see {logf.name}")
            time.sleep(0.02)
        secs = time.monotonic() - t0
        pg_cpu = self.srv.pg_cpu() - pg0
        kafka_cpu = self.srv.kafka_cpu() - k0
        wal1 = self.srv.wal_insert_lsn()
        if rusage is not None:
            cpu = rusage.ru_utime + rusage.ru_stime
        else:
            c = proc_cpu(pid)
            cpu = c if c is not None else cpu
            hwm = max(hwm, proc_hwm_kib(pid))
        self.stop(child, ddir)
        delivered = txns = None
        if eos:
            delivered = kafka.committed_count(self.srv.brokers, topic_prefix + "order")
            # One checkpoint record and one commit marker per Kafka transaction.
            txns = (kafka.end_offsets(self.srv.brokers, kafka.CHECKPOINT_TOPIC) - cp0) // 2
        elif kind != "recv":
            delivered = kafka.topic_count(self.srv.brokers, topic_prefix + "order")
        spill = None
        if kind != "poll":
            row = self.srv.q("SELECT spill_bytes FROM pg_stat_replication_slots WHERE slot_name = %s",
                         (slot,))
            spill = row[0][0] if row else None
        res = dict(system=system, shape=shape, run=run, events=n, seconds=secs,
                   rate=n / secs, cpu_s=cpu, cpu_us_per_event=cpu * 1e6 / n,
                   peak_rss_mib=hwm / 1024, pg_cpu_s=pg_cpu, kafka_cpu_s=kafka_cpu,
                   drain_wal_bytes_per_event=max(wal1 - wal0, 0) / n,
                   startup_s=t_active, delivered=delivered, spill_bytes=spill,
                   kafka_txns=txns, loadavg=load1)
        log(f"  {SYSTEMS[system][0]:<30} {secs:7.2f} s {n / secs:9.0f} ev/s  cpu {cpu:6.2f} s "
            f"({res['cpu_us_per_event']:.2f} us/ev)  rss {hwm / 1024:7.1f} MiB  pg cpu {pg_cpu:5.1f} s"
            f"  kafka cpu {kafka_cpu:5.1f} s  wal/ev {res['drain_wal_bytes_per_event']:.0f}"
            + (f"  delivered {delivered}" if delivered is not None else "")
            + (f"  kafka txns {txns}" if txns is not None else "") + f"  load {load1:.1f}")
        if delivered is not None and delivered < n:
            raise RuntimeError(f"{system}: only {delivered} of {n} events in Kafka")
        if eos and delivered != n:
            log(f"  {system}: {delivered} events committed for {n}: duplicates")
        return res

    # --- the suite ---------------------------------------------------------
    def reset(self):
        self.srv.drop_slots()
        self.srv.q("TRUNCATE outbox")
        if self.srv.q1("SELECT to_regclass('public.bench_orders') IS NOT NULL"):
            self.srv.q("TRUNCATE bench_orders")
        self.srv.q("CHECKPOINT")

    def plugin(self, system):
        return ("pgoutput" if system in ("relay-pgoutput", "recv-pgoutput", "debezium")
                else "wal2json")

    def cdc_count(self):
        return sum(SYSTEMS[s][1] != "poll" for s in self.systems)

    def drain_all(self, shape, n, prepare, write):
        """One backlog shape for every system: the CDC systems drain copies
        of one WAL (slots made before it is written), each poller run gets
        the backlog written anew into the emptied table."""
        cdc = [s for s in self.systems if SYSTEMS[s][1] != "poll"]
        poll = [s for s in self.systems if SYSTEMS[s][1] == "poll"]
        if cdc:
            self.reset()
            prepare()
            for r in range(1, self.a.runs + 1):
                for s in cdc:
                    self.srv.q("SELECT pg_create_logical_replication_slot(%s, %s)",
                           (f"{s.replace('-', '_')}_{shape}_{r}", self.plugin(s)))
            secs, wal, last_commit = write()
            self.writes[shape] = (secs, wal)
            log(f"  wrote in {secs:.1f} s, WAL {wal / MIB:.0f} MiB "
                f"({wal / n:.0f} B/event), last commit {lsn_str(last_commit)}")
            for r in range(1, self.a.runs + 1):
                order = cdc[r - 1:] + cdc[:r - 1]  # rotate the order per run
                for i, s in enumerate(order):
                    self.results.append(self.drain(s, shape, r, last_commit, n))
                    self.results[-1]["position"] = i + 1
        for r in range(1, self.a.runs + 1):
            for s in poll:
                self.reset()
                prepare()
                secs, wal, last_commit = write()
                self.writes.setdefault(shape, (secs, wal))
                self.results.append(self.drain(s, shape, r, last_commit, n))

    def steady(self, system):
        """The mixed load at --mixed-rate rows/s for --mixed-seconds while a
        CDC system runs; samples its slot every 0.5 s: WAL between
        pg_current_wal_lsn() and confirmed_flush_lsn (what it has not
        confirmed) and restart_lsn (what the server retains for it)."""
        tag = f"{system.replace('-', '_')}_steady"
        slot = tag
        topic_prefix = f"bench.{tag}."
        self.reset()
        workloads.mixed_seed(self.srv)
        self.srv.q("SELECT pg_create_logical_replication_slot(%s, %s)", (slot, self.plugin(system)))
        kafka.warm_topic(self.srv.brokers, topic_prefix + "order")
        logf = open(os.path.join(self.work, f"{tag}.log"), "w")
        child, pid, ddir = self.start(system, tag, slot, logf)
        deadline = time.monotonic() + 180
        while not self.srv.q1("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)):
            if time.monotonic() > deadline or (child is not None and child.poll() is not None):
                self.stop(child, ddir)
                raise RuntimeError(f"{system} did not attach to its slot, see {logf.name}")
            time.sleep(0.1)
        every = mixed_every(self.a.mixed_share)
        txn_rate = self.a.mixed_rate / MIXED_ROWS
        state = dict(t=0, error=None, done=False)

        def writer():
            try:
                with psycopg.connect(self.srv.conninfo, autocommit=True) as w:
                    w.execute("SET synchronous_commit = off")
                    t_start = time.monotonic()
                    while True:
                        el = time.monotonic() - t_start
                        if el >= self.a.mixed_seconds:
                            break
                        target = int(el * txn_rate)
                        if target > state["t"]:
                            hi = min(target, state["t"] + 200)
                            w.execute(f"CALL bench_mixed({state['t']}, {hi}, {every})")
                            state["t"] = hi
                        else:
                            time.sleep(0.005)
                    state["secs"] = time.monotonic() - t_start
            except Exception as e:  # reported by the main thread
                state["error"] = e
            state["done"] = True

        sql = ("SELECT pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), "
               "confirmed_flush_lsn)::bigint, pg_wal_lsn_diff(pg_current_wal_lsn(), "
               "restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = %s")
        samples = []  # (t, behind confirmed_flush, behind restart_lsn, during load)
        wal0 = lsn_int(self.srv.q1("SELECT pg_current_wal_lsn()::text"))
        cpu0 = proc_cpu(pid) or 0.0
        hwm = 0
        th = threading.Thread(target=writer, daemon=True)
        t0 = time.monotonic()
        th.start()
        try:
            while not state["done"]:
                time.sleep(0.5)
                _, conf, rest = self.srv.q(sql, (slot,))[0]
                samples.append((time.monotonic() - t0, conf, rest, True))
                hwm = max(hwm, proc_hwm_kib(pid))
                if child is not None and child.poll() is not None:
                    raise RuntimeError(f"{system} exited during the load, see {logf.name}")
            th.join()
            if state["error"] is not None:
                raise RuntimeError(f"mixed load writer failed: {state['error']}")
            t_end = time.monotonic()
            end = lsn_int(self.srv.q1("SELECT pg_current_wal_lsn()::text"))
            cpu_load = (proc_cpu(pid) or 0.0) - cpu0
            # After the load: until the slot confirmed everything written
            # during it, and then (after a CHECKPOINT) until restart_lsn
            # passed the load's end, or 30 s more.
            caught_up = released = None
            deadline = t_end + 30
            while time.monotonic() < deadline:
                time.sleep(0.5)
                cur, conf, rest = self.srv.q(sql, (slot,))[0]
                samples.append((time.monotonic() - t0, conf, rest, False))
                hwm = max(hwm, proc_hwm_kib(pid))
                if caught_up is None and lsn_int(cur) - conf >= end:
                    caught_up = time.monotonic() - t_end
                    deadline = time.monotonic() + 30
                    # Logs a running-transactions record now instead of at
                    # the background writer's next one (every 15 s).
                    self.srv.q("CHECKPOINT")
                if caught_up is not None and lsn_int(cur) - rest >= end:
                    released = time.monotonic() - t_end
                    break
        finally:
            self.stop(child, ddir)
        txns = state["t"]
        events = (txns + every - 1) // every
        delivered = kafka.topic_count(self.srv.brokers, topic_prefix + "order")
        load = [x for x in samples if x[3]]
        res = dict(system=system, seconds=state["secs"], txns=txns, events=events,
                   rows_per_s=txns * MIXED_ROWS / state["secs"], wal_bytes=end - wal0,
                   cpu_s=cpu_load, peak_rss_mib=hwm / 1024, caught_up_s=caught_up,
                   released_s=released,
                   max_conf=max(x[1] for x in load), max_restart=max(x[2] for x in load),
                   final_conf=samples[-1][1], final_restart=samples[-1][2],
                   delivered=delivered, samples=samples)
        log(f"  {SYSTEMS[system][0]:<30} steady {res['rows_per_s']:.0f} rows/s for "
            f"{res['seconds']:.1f} s, WAL {res['wal_bytes'] / MIB:.0f} MiB: behind confirmed_flush "
            f"max {res['max_conf'] / MIB:.1f} MiB final {res['final_conf'] / 1024:.0f} KiB, "
            f"behind restart_lsn max {res['max_restart'] / MIB:.1f} MiB final "
            f"{res['final_restart'] / MIB:.1f} MiB, caught up {fmt(caught_up)} s, "
            f"restart_lsn past the load {fmt(released)} s, "
            f"cpu {cpu_load:.2f} s, rss {hwm / 1024:.1f} MiB, delivered {delivered}")
        if caught_up is None:
            # Reported, not fatal: a system that confirms only at its own
            # events (Debezium without heartbeats) never passes trailing
            # WAL without outbox rows.
            log(f"  {system}: slot did not confirm the load's WAL within 30 s after it")
        if delivered < events:
            raise RuntimeError(f"{system}: only {delivered} of {events} events in Kafka")
        return res

    def run(self):
        self.srv.run_file("outbox.sql")
        self.srv.run_file("poller_notify.sql")
        self.srv.q(f"DROP PUBLICATION IF EXISTS {PUBLICATION}")
        self.srv.q(f"CREATE PUBLICATION {PUBLICATION} FOR TABLE public.outbox")
        # What outbox-relay would create itself (postgres.create_publication).
        self.srv.q(f"DROP PUBLICATION IF EXISTS {RELAY_PUBLICATION}")
        self.srv.q(f"CREATE PUBLICATION {RELAY_PUBLICATION} FOR TABLE public.outbox "
               "WITH (publish = 'insert')")
        have_poller = os.path.exists(os.path.join(self.a.bin, "outbox-poller"))
        self.systems = [s for s in self.a.systems if have_poller or not s.startswith("poller")]
        if len(self.systems) < len(self.a.systems):
            log("outbox-poller not built: skipping the poller")
        # Every CDC run of a scenario has its own slot, all made before the
        # backlog (bench/run.sh raises the limit from the run count).
        slots = self.cdc_count() * self.a.runs
        if slots > int(self.srv.q1("SHOW max_replication_slots")):
            raise RuntimeError(f"{slots} slots needed, max_replication_slots is "
                               f"{self.srv.q1('SHOW max_replication_slots')}")
        self.writes = {}
        self.steady_results = []
        if any(eos_settings(s) for s in self.systems):
            # The relay reads it at start; made now, so no drain waits for
            # its auto-creation (a record with another key is ignored).
            kafka.warm_topic(self.srv.brokers, kafka.CHECKPOINT_TOPIC)
        if "backlog" in self.a.scenarios:
            for shape in self.a.per_txn:
                log(f"backlog: {shape} event(s) per transaction, {self.a.events} events")
                self.drain_all(shape, self.a.events, lambda: None,
                               lambda shape=shape: workloads.write_backlog(self.srv, shape, self.a.events))
        if "mixed" in self.a.scenarios:
            workloads.mixed_setup(self.srv)
            every = mixed_every(self.a.mixed_share)
            ntx = (self.a.mixed_events - 1) * every + 1
            log(f"mixed: {self.a.mixed_events} outbox events in {ntx * MIXED_ROWS} rows "
                f"({ntx} transactions)")
            self.drain_all("mixed", self.a.mixed_events, lambda: workloads.mixed_seed(self.srv), lambda: workloads.write_mixed(self.srv, self.a.mixed_events,
                                                            mixed_every(self.a.mixed_share)))
            for s in self.systems:
                if SYSTEMS[s][1] == "cdc":
                    log(f"mixed, steady: {self.a.mixed_rate} rows/s for {self.a.mixed_seconds} s")
                    self.steady_results.append(self.steady(s))
        if "large" in self.a.scenarios:
            n = self.a.large_events * self.a.large_txns
            log(f"large: {self.a.large_txns} transaction(s) of {self.a.large_events} events")
            self.drain_all("large", n, lambda: None,
                           lambda: workloads.write_backlog(self.srv, self.a.large_events, n))
        self.reset()
