"""The Java agent's rules in a real JVM on the real Java producer (Byteman from Maven Central, kafka-clients of the
default Kafka release): a stall armed at a point stops the thread that passes it, once, and traces it; a point
passed without an arm, or ``process`` on a producer's first record of a transaction, does not stall. No broker: the
probe's producer calls fail fast, after the points are passed (``tests/apps/stall-probe``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafka_soak.backends import kafka_jars
from kafka_soak.shared import stalls
from kafka_soak.toolchain import byteman, stall_agent

PROBE = Path(__file__).resolve().parents[1] / "apps" / "stall-probe" / "StallProbe.java"


def probe(directory: Path, planned: list[stalls.Stall], *ops: str) -> dict[str, list[int]]:
    """Run the probe with the agent's rules for ``planned`` (those armed are in ``directory``); each op's millis."""
    options = stall_agent.java_options(byteman.agent_jar(), directory, planned)
    done = subprocess.run([kafka_jars.java_executable(), options, "-cp", f"{kafka_jars.resolve()}/*", str(PROBE),
                           *ops], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    took: dict[str, list[int]] = {}
    for line in done.stdout.splitlines():
        op, _, millis = line.partition(" ")
        if op in ("send", "commit") and millis.isdigit():
            took.setdefault(op, []).append(int(millis))
    assert sum(map(len, took.values())) == len(ops), done.stdout
    return took


def test_a_jvm_s_thread_stalls_once_where_its_stall_is_armed_and_nowhere_else(tmp_path):
    commit, process = stalls.Stall(2, 1, "commit", 2), stalls.Stall(4, 1, "process", 2)
    stalls.arm(tmp_path, commit)
    took = probe(tmp_path, [commit, process], "commit", "commit")
    assert took["commit"][0] >= 2000, took  # armed: the first passage stalls
    [trace] = stalls.traced(tmp_path)
    assert trace["step"] == 2 and trace["thread"] == "main" and trace["resumed"] - trace["stalled"] >= 2.0
    assert not stalls.arm_path(tmp_path, 2).exists()  # taken: the second passage went on

    stalls.arm(tmp_path, process)
    took = probe(tmp_path, [commit, process], "send", "send", "send")
    traced = {t["step"]: t for t in stalls.traced(tmp_path)}
    assert took["send"][1] >= 2000, took  # the second record of the transaction, not the first
    assert traced[4]["resumed"] - traced[4]["stalled"] >= 2.0 and not stalls.arm_path(tmp_path, 4).exists()
