"""Kafka as the benchmarks see it, through kcat: topics made before a run,
end offsets, what a read_committed consumer reads."""

import json
import subprocess

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
