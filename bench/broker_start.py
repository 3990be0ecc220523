"""Broker start to ready: the `local` backend's provision against a bare start of the same Kafka JVMs.

The figure: ``LocalKafkaBackend.provision`` of a 1-node and a 3-node cluster, from the call until every node is
registered and the run's four topics have leaders (layout, storage format, JVM start, readiness, topics).
The baseline, what a user would do by hand with the same jars: format each node's storage with the same
properties, start ``kafka.Kafka`` on it, and wait until each broker port accepts a TCP connection (no
topics, no check that the controller registered the brokers). Rounds alternate between the two.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import time
from pathlib import Path

from common import figure, parse_size, runs_dir, write_results

from kafka_soak.backends import kafka_jars
from kafka_soak.backends.local_kafka import Layout, LocalKafkaBackend
from kafka_soak.params import KAFKA_VERSION

SIZES = {"quick": {"rounds": 3}, "large": {"rounds": 7}}
TOPICS = {"input": 4, "output": 4, "changelog": 4, "assertions": 1}
# Provisioning does more than the bare start (readiness through the controller, four topics): allowed 1.5x.
TARGET = 1.5


def ours(work: Path, brokers: int) -> float:
    backend = LocalKafkaBackend(work, brokers)
    started = time.monotonic()
    try:
        backend.provision(TOPICS, "bench")
        return time.monotonic() - started
    finally:
        backend.release(None)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def bare(work: Path, brokers: int) -> float:
    """Format and start the same nodes by hand, ready when every broker port answers TCP."""
    layout: Layout = LocalKafkaBackend(work, brokers).layout()
    started = time.monotonic()
    procs = []
    try:
        formats = []
        for node in layout.nodes:
            config = work / f"bare-{node.node_id}.properties"
            props = layout.server_properties(node, work / f"bare-data-{node.node_id}")
            config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            formats.append(subprocess.Popen(kafka_jars.java_command(layout.version, "kafka.tools.StorageTool",
                                                                    "format", "-t", layout.cluster_id, "-c",
                                                                    str(config)), stdout=subprocess.DEVNULL))
        for proc in formats:
            proc.wait(120)
        for node in layout.nodes:
            log = (work / f"bare-{node.node_id}.log").open("wb")
            procs.append(subprocess.Popen(kafka_jars.java_command(
                layout.version, "kafka.Kafka", str(work / f"bare-{node.node_id}.properties"), heap="512m"),
                stdout=log, stderr=subprocess.STDOUT))
        while not all(port_open(node.port) for node in layout.nodes):
            time.sleep(0.05)
        return time.monotonic() - started
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def main() -> None:
    size = parse_size(__doc__.splitlines()[0])
    rounds = SIZES[size]["rounds"]
    kafka_jars.resolve(KAFKA_VERSION)
    work = runs_dir("broker-start")
    times: dict[str, dict[str, list[float]]] = {}
    for brokers in (1, 3):
        times[str(brokers)] = {"provision": [], "bare": []}
        for r in range(rounds):
            times[str(brokers)]["bare"].append(bare(work / f"bare-{brokers}-{r}", brokers))
            times[str(brokers)]["provision"].append(ours(work / f"ours-{brokers}-{r}", brokers))
            print(f"{brokers} node(s), round {r + 1}: provision {times[str(brokers)]['provision'][-1]:.1f} s, "
                  f"bare {times[str(brokers)]['bare'][-1]:.1f} s", flush=True)
    figures = []
    for brokers, measured in times.items():
        mine, base = statistics.median(measured["provision"]), statistics.median(measured["bare"])
        figures.append(figure(f"start to ready, {brokers} node(s)", mine, "s", base, f"≤ {TARGET:g}× baseline",
                              mine <= TARGET * base))
    body = f"""
Apache Kafka {KAFKA_VERSION} from the project's jars, KRaft nodes that are broker and controller at
once, on loopback; {rounds} rounds per cluster size, alternating, medians. The figure is the `local` backend's
provision: from the call until the metadata lists every node and the run's four topics
({", ".join(f"{k} × {v}" for k, v in TOPICS.items())} partitions) have leaders. The baseline formats and starts
the same nodes by hand and stops as soon as each broker port accepts a TCP connection, before the node has
joined the quorum or can serve a topic, so it is a lower bound rather than an equal. Rounds (s), provision /
bare: {"; ".join(f"{b} node(s): " + ", ".join(f"{p:.1f}/{q:.1f}" for p, q in zip(m["provision"], m["bare"],
                                                                                   strict=True))
                 for b, m in times.items())}.
What limits both: the JVM start and class loading of each node (two cores for three JVMs), then the
controller quorum's election; provisioning adds the storage check, the readiness poll and topic creation.
"""
    write_results("broker_start", "Broker start", size, figures, body, {"rounds": times, "work_dir": str(work)})


if __name__ == "__main__":
    main()
