"""The embedded broker process: a mock cluster that outlives the task that started it.

Run as ``python -m kafka_soak.backends.embedded_broker --state-file F``. It writes ``F`` (JSON: pid,
bootstrap servers, control address) once it listens, serves a line-JSON control protocol on loopback
(create topics, broker down/up, latency, shutdown), and exits on SIGTERM or a ``shutdown`` request.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socketserver
import threading
from pathlib import Path
from typing import Any

from kafka_soak.backends.mock_cluster import MockCluster, MockClusterError

log = logging.getLogger("kafka_soak.embedded_broker")


def _handle(cluster: MockCluster, request: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
    """Apply one control request to the cluster."""
    op = request.get("op")
    if op == "create_topic":
        cluster.create_topic(request["topic"], int(request["partitions"]))
    elif op == "broker_down":
        cluster.set_broker_down(int(request["broker"]))
    elif op == "broker_up":
        cluster.set_broker_up(int(request["broker"]))
    elif op == "set_rtt":
        cluster.set_rtt(int(request["broker"]), int(request["rtt_ms"]))
    elif op == "ping":
        pass
    elif op == "shutdown":
        stop.set()
    else:
        raise MockClusterError(f"unknown control op {op!r}; known: create_topic, broker_down, broker_up, "
                               "set_rtt, ping, shutdown")
    log.info("control: %s", json.dumps(request, sort_keys=True))
    return {"ok": True, "bootstrap_servers": cluster.bootstrap_servers}


def serve(state_file: Path, brokers: int) -> None:
    cluster = MockCluster(brokers)
    stop = threading.Event()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for line in self.rfile:
                try:
                    reply = _handle(cluster, json.loads(line), stop)
                except (MockClusterError, KeyError, ValueError) as exc:
                    reply = {"ok": False, "error": str(exc)}
                self.wfile.write(json.dumps(reply).encode() + b"\n")
                self.wfile.flush()

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="control", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    host, port = server.server_address
    state = {"pid": os.getpid(), "bootstrap_servers": cluster.bootstrap_servers, "control": f"{host}:{port}",
             "brokers": brokers}
    tmp = state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(state_file)
    log.info("embedded broker up: %s brokers at %s, control on %s:%s", brokers, state["bootstrap_servers"],
             host, port)
    stop.wait()
    log.info("embedded broker shutting down")
    server.shutdown()
    cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-file", type=Path, required=True)
    parser.add_argument("--brokers", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(args.state_file, args.brokers)


if __name__ == "__main__":
    main()
