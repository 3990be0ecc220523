"""What each quota did: the broker's own measurements of every quota'd client, sampled through the run.

A broker keeps, per client id, the rate its quota is judged on (``byte-rate`` of the Produce or Fetch sensor,
``request-time`` of the Request sensor) and how long it throttled the client (``throttle-time``), as JMX MBeans.
The ``local`` backend's nodes serve JMX on loopback; Kafka's own ``JmxTool`` samples each quota'd client's
MBean on each node once a second, from provision until the app's last instance stopped, into
``quotas/<n>.broker-<id>.csv``. ``summarize`` turns the samples into what the verdict and the report show next
to each quota: the rate the broker measured (median and peak of the samples while the client was active) and
its throttle time, so a quota that was set but never bit is visible. Quotas apply per broker: each broker's
figures are kept, and the worst is the one compared with the quota.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path
from typing import Any

from kafka_soak.backends import kafka_jars
from kafka_soak.quotas import Quota
from kafka_soak.runtime.local import LocalProcesses

# quota setting -> (the broker's quota sensor, the attribute it is judged on, its unit)
SENSORS = {"producer_byte_rate": ("Produce", "byte-rate", "B/s"), "consumer_byte_rate": ("Fetch", "byte-rate", "B/s"),
           "request_percentage": ("Request", "request-time", "%")}
PREFIX = "quota-meter-"
JMX_TOOL = "org.apache.kafka.tools.JmxTool"


def jmx_properties(port: int) -> dict[str, str]:
    """JVM properties that make a broker serve JMX on a loopback port, without authentication (loopback only)."""
    return {"com.sun.management.jmxremote": "true", "com.sun.management.jmxremote.port": str(port),
            "com.sun.management.jmxremote.rmi.port": str(port), "com.sun.management.jmxremote.host": "127.0.0.1",
            "java.rmi.server.hostname": "127.0.0.1", "com.sun.management.jmxremote.authenticate": "false",
            "com.sun.management.jmxremote.ssl": "false"}


def readings(quotas: list[Quota]) -> list[tuple[Quota, str]]:
    """Every (quota, setting) pair a run measures, in a fixed order (their index names their files)."""
    return [(quota, setting) for quota in quotas for setting in quota.settings()]


def start(processes: LocalProcesses, version: str, brokers: dict[int, int], quotas: list[Quota], out_dir: Path) -> None:
    """One JmxTool per quota setting and broker (``brokers``: node id -> JMX port); each waits for its MBean, which
    the broker creates when the client first connects."""
    for n, (quota, setting) in enumerate(readings(quotas)):
        sensor, attribute, _unit = SENSORS[setting]
        for node, port in brokers.items():
            name = f"{PREFIX}{n}-broker-{node}"
            if processes.is_alive(name):
                continue
            command = kafka_jars.java_command(
                version, JMX_TOOL, "--jmx-url", f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi",
                "--object-name", f"kafka.server:type={sensor},client-id={quota.client_id}",
                "--attributes", f"{attribute},throttle-time", "--wait", "--reporting-interval", "1000",
                "--date-format", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", heap="64m",
                properties={"kafka.soak.log.level": "WARN"})
            processes.start(name, command, out_dir / f"{n}.broker-{node}.csv")


def stop(processes: LocalProcesses) -> None:
    for name in processes.names():
        if name.startswith(PREFIX):
            processes.stop(name, timeout=10)


def samples(path: Path) -> list[tuple[float, float]]:
    """(rate, throttle ms) per second from a JmxTool CSV (its first lines may be the tool's own messages)."""
    if not path.exists():
        return []
    lines = path.read_text(errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"time"')), None)
    if start is None:
        return []
    rows = []
    for row in csv.reader(lines[start + 1:]):
        try:
            rows.append((float(row[1]), float(row[2])))
        except (IndexError, ValueError):
            continue
    return rows


def summarize(quotas: list[Quota], out_dir: Path, brokers: list[int]) -> list[dict[str, Any]]:
    """Per quota setting: the limit, and per broker the measured rate (median and peak while the client was
    active) and throttle time; ``bit`` says whether any broker throttled the client."""
    result = []
    for n, (quota, setting) in enumerate(readings(quotas)):
        _sensor, attribute, unit = SENSORS[setting]
        limit = quota.settings()[setting]
        per_broker = {}
        for node in brokers:
            active = [(rate, throttle) for rate, throttle in samples(out_dir / f"{n}.broker-{node}.csv") if rate > 0]
            if active:
                rates = [rate for rate, _ in active]
                per_broker[str(node)] = {
                    "samples": len(active), "median": round(statistics.median(rates), 1), "peak": round(max(rates), 1),
                    "throttle_ms_mean": round(statistics.fmean(t for _, t in active), 1),
                    "throttle_ms_max": round(max(t for _, t in active), 1)}
        worst = max(per_broker.values(), key=lambda b: b["median"], default=None)
        result.append({"client_id": quota.client_id, "setting": setting, "quota": limit, "unit": unit,
                       "measured": attribute, "achieved": worst["median"] if worst else None,
                       "peak": worst["peak"] if worst else None,
                       "throttle_ms_max": max((b["throttle_ms_max"] for b in per_broker.values()), default=0.0),
                       "bit": any(b["throttle_ms_max"] > 0 for b in per_broker.values()),
                       "per_broker": per_broker})
    return result
