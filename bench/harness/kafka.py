"""Kafka as the benchmarks see it, through kcat: topics made before a run,
end offsets, what a read_committed consumer reads."""

import datetime
import json
import os
import re
import subprocess

from harness import ROOT

# The relay's default kafka.checkpoint_topic (not overridden here).
CHECKPOINT_TOPIC = "outbox.relay.checkpoints"


def warm_topic(brokers, topic, key="warmup"):
    """Creates the topic before the run (with one record) so no system
    pays for auto-creation during its drain."""
    subprocess.run(["kcat", "-P", "-b", brokers, "-t", topic, "-k", key],
                   input=b"{}", check=True)


def end_offsets(brokers, topic):
    """Sum of the topic's end offsets."""
    out = subprocess.run(
        ["kcat", "-b", brokers, "-L", "-t", topic, "-J"],
        capture_output=True, check=True).stdout
    parts = [p["partition"] for p in json.loads(out)["topics"][0]["partitions"]]
    args = ["kcat", "-b", brokers, "-Q"]
    for p in parts:
        args += ["-t", f"{topic}:{p}:-1"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    total = 0
    for line in out.splitlines():
        if "offset" in line:
            total += int(line.rsplit("offset", 1)[1].split()[0])
    return total


def topic_count(brokers, topic):
    """Records in the topic (sum of end offsets), minus the warm-up one."""
    return end_offsets(brokers, topic) - 1


def committed_count(brokers, topic):
    """Records a read_committed consumer reads in the topic, minus the
    warm-up one: the end offsets of a transactionally written topic also
    count one commit marker per transaction and partition."""
    out = subprocess.run(
        ["kcat", "-C", "-b", brokers, "-t", topic, "-o", "beginning", "-e", "-q",
         "-X", "isolation.level=read_committed", "-f", "x\\n"],
        capture_output=True, check=True).stdout
    return out.count(b"x") - 1


def broker_gc(log_path, start, end):
    """The broker's stop-the-world pauses between two Unix times, from its
    GC log (bench/lib.sh starts it with -Xlog:gc:file=...:time): (count,
    total ms, longest ms); None without the log."""
    if not log_path or not os.path.exists(log_path):
        return None
    count, total, longest = 0, 0.0, 0.0
    with open(log_path) as f:
        for line in f:
            m = GC_PAUSE.match(line)
            if not m:
                continue
            at = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
            if start <= at <= end:
                ms = float(m.group(2))
                count, total, longest = count + 1, total + ms, max(longest, ms)
    return count, total, longest


GC_PAUSE = re.compile(r"^\[([^\]]+)\].* Pause .* ([0-9.]+)ms$")
# The broker's request times (ms) by JMX: Kafka's RequestMetrics histograms.
REQUEST_TIMES = {"produce": "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce",
                 "fetch": "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch"}


def broker_request_times(kafka_dir, jmx_port):
    """{"produce"|"fetch": (count, mean ms since start, p99 ms of the
    reservoir)} read once through Kafka's own JmxTool; {} without a JMX
    port or when the tool fails. The count and mean are cumulative (their
    deltas between two reads give a measurement's mean); the p99 is Kafka's
    exponentially decaying reservoir, weighted to the last minutes."""
    if not jmx_port or not kafka_dir:
        return {}
    cmd = [os.path.join(ROOT, "scripts", "kafka.sh"), "jmx", kafka_dir, str(jmx_port)]
    cmd += list(REQUEST_TIMES.values())
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = {}
    for line in out.splitlines():
        # "<object name>:<attribute>=<value>" lines
        name, _, value = line.rpartition("=")
        obj, _, attr = name.rpartition(":")
        for key, wanted in REQUEST_TIMES.items():
            if obj == wanted:
                try:
                    values.setdefault(key, {})[attr] = float(value)
                except ValueError:
                    pass
    return {k: (v.get("Count"), v.get("Mean"), v.get("99thPercentile"))
            for k, v in values.items() if "Count" in v}


def request_mean_ms(before, after, key):
    """The mean request time over a measurement from two reads of
    broker_request_times (the cumulative means weighted by their counts)."""
    if key not in before or key not in after:
        return None
    (c0, m0, _), (c1, m1, _) = before[key], after[key]
    if c0 is None or c1 is None or c1 <= c0 or m0 is None or m1 is None:
        return None
    return (m1 * c1 - m0 * c0) / (c1 - c0)
