"""Processes on this machine, from /proc: CPU seconds, peak RSS, the
machine's busy time, and stopping a child."""

import os
import resource
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """The fields of /proc/PID/stat after the command name, None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def proc_cpu(pid, children=False):
    """utime+stime seconds of a live process (all its threads), None if
    gone. With children also those of its children: the reaped ones (cutime,
    cstime) and the live ones (utime+stime): the whole PostgreSQL server
    when pid is the postmaster."""
    f = _stat(pid)
    if f is None:
        return None
    ticks = sum(int(x) for x in f[11:(15 if children else 13)])
    if children:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as c:
                kids = c.read().split()
        except OSError:
            kids = []
        for k in kids:
            c = _stat(k)
            if c is not None:
                ticks += int(c[11]) + int(c[12])
    return ticks / CLK_TCK


def tree_cpu(root_pid):
    """CPU seconds of root_pid and its children (proc_cpu with children), 0
    if gone."""
    return proc_cpu(root_pid, children=True) or 0.0


def proc_hwm_kib(pid):
    """Peak RSS (VmHWM) in KiB, 0 if gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def machine_busy():
    """Busy CPU seconds of the whole machine since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / CLK_TCK  # less idle and iowait


def pid_from(path):
    """The number on the first line of a pid file, None without one."""
    try:
        with open(path) as f:
            return int(f.readline())
    except (OSError, ValueError):
        return None


class CpuMeter:
    """What each process used during one measurement, in cores (CPU seconds
    per second of wall time): the system under test, PostgreSQL (postmaster,
    walsenders and every backend, the writers' included), the Kafka broker,
    the load generator and the consumer (this script's reaped children), and
    the whole machine. Shows where the 2 cores went when a rate is not
    sustained."""

    def __init__(self, system_pid):
        self.pids = {"system": (system_pid, False),
                     "pg": (pid_from(os.path.join(os.environ["OUTBOX_PG_DIR"], "data",
                                                  "postmaster.pid")), True),
                     "kafka": (pid_from(os.path.join(os.environ["OUTBOX_KAFKA_DIR"], "pid")),
                               False)}
        self.start = self.sample()

    def sample(self):
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = {k: (proc_cpu(p, ch) or 0.0) if p else 0.0 for k, (p, ch) in self.pids.items()}
        s.update(bench=ru.ru_utime + ru.ru_stime, machine=machine_busy(), wall=time.time())
        return s

    def cores(self):
        end = self.sample()
        wall = end["wall"] - self.start["wall"]
        return {f"cpu_{k}": (end[k] - self.start[k]) / wall
                for k in ("system", "pg", "kafka", "bench", "machine")}


def stop_process(child):
    """SIGTERM, then SIGKILL after 30 s; nothing for a child that exited."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


# --pin (bench/latency.py): the writers and PostgreSQL on one core, Kafka,
# the system under test and the consumer on the other, so that neither side
# waits for the other's CPU.
PIN_DATABASE, PIN_DELIVERY = "0", "1"


def pin_command(cmd, cpus):
    """cmd run on `cpus` (taskset's list), or as is when cpus is falsy."""
    return ["taskset", "-c", cpus] + cmd if cpus else cmd


def pin_tree(pid, cpus):
    """Pins process `pid`, every thread of it, and its live children (and
    theirs); children it forks later inherit the pinning (a PostgreSQL
    postmaster's new backends and walsenders)."""
    pids, todo = [], [str(pid)]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as c:
                todo += c.read().split()
        except OSError:
            pass
    for p in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, p], check=True,
                       stdout=subprocess.DEVNULL)
    return len(pids)
