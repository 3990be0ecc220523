"""The embedded Kafka backend: a broker process per run, started at provision, stopped at release."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Any

from kafka_soak.backends.cluster import Cluster
from kafka_soak.backends.mock_cluster import LIMITATIONS, PARTITION_CAPACITY_BYTES
from kafka_soak.runtime.local import LocalProcesses, python_command

log = logging.getLogger(__name__)

BROKER_PROCESS = "embedded-broker"


class BrokerControlError(RuntimeError):
    pass


def control(address: str, request: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request to the embedded broker's control interface."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        reply = json.loads(sock.makefile("rb").readline() or b"{}")
    if not reply.get("ok"):
        raise BrokerControlError(f"embedded broker refused {request.get('op')}: {reply.get('error', 'no reply')}")
    return reply


class EmbeddedBackend:
    name = "embedded"
    partition_capacity_bytes = PARTITION_CAPACITY_BYTES
    limitations = LIMITATIONS

    def __init__(self, run_dir: Path, brokers: int = 1) -> None:
        self.run_dir = run_dir
        self.brokers = brokers
        self.processes = LocalProcesses(run_dir)
        self.state_file = run_dir / "broker.json"

    def provision(self, topics: dict[str, int], prefix: str, start_timeout: float = 30.0) -> Cluster:
        """Start the broker (or reattach to it on a retry) and create ``{role: partitions}`` topics."""
        if self.processes.process(BROKER_PROCESS) is None:
            self.state_file.unlink(missing_ok=True)
            self.processes.start(BROKER_PROCESS, python_command(
                "kafka_soak.backends.embedded_broker", "--state-file", str(self.state_file),
                "--brokers", str(self.brokers)), self.run_dir / "logs" / "embedded-broker.log")
        deadline = time.monotonic() + start_timeout
        while not self.state_file.exists():
            if time.monotonic() > deadline or self.processes.process(BROKER_PROCESS) is None:
                raise BrokerControlError(f"the embedded broker did not come up within {start_timeout:.0f} s; "
                                         f"see {self.run_dir / 'logs' / 'embedded-broker.log'}")
            time.sleep(0.1)
        state = json.loads(self.state_file.read_text())
        names = {}
        for role, partitions in topics.items():
            names[role] = f"{prefix}.{role}"
            control(state["control"], {"op": "create_topic", "topic": names[role], "partitions": partitions})
            log.info("created topic %s with %d partitions", names[role], partitions)
        log.warning("embedded broker limits (also written into the verdict): %s", "; ".join(LIMITATIONS.values()))
        return Cluster(self.name, state["bootstrap_servers"], names, dict(LIMITATIONS), state["control"])

    def release(self, cluster: Cluster | None = None) -> None:
        """Stop the run's broker process (found by its registration, so ``cluster`` is not needed)."""
        code = self.processes.stop(BROKER_PROCESS, timeout=15)
        log.info("embedded broker stopped (exit code %s)", code)
