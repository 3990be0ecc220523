"""What each quota did: the broker's own measurements of every quota'd client, sampled through the run.

A broker keeps, per client id, the rate its quota is judged on (``byte-rate`` of the Produce or Fetch sensor,
``request-time`` of the Request sensor) and how long it throttled the client (``throttle-time``), as JMX MBeans.
The ``local`` backend's nodes serve JMX on loopback; ``kafka/QuotaMeter.java`` (run by ``java`` in source-file
mode: no build) reads every quota'd client's MBeans on each node once a second, from provision until the app's
last instance stopped, into ``quotas/broker-<id>.csv``. Kafka's ``JmxTool`` would be the tool made for it, but it
resolves its MBeans once and gives up after 10 s on a client that has not connected yet. ``usage_per_setting`` turns
the samples into what the verdict and the report show next to each quota: the rate the broker measured
(median and peak of the samples while the client was active) and its throttle time, so a quota that was set
but never bit is visible. Quotas apply per broker: each broker's
figures are kept, and the worst is the one compared with the quota.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_soak.backends import kafka_jars
from kafka_soak.backends.quotas import Quota
from kafka_soak.infra.runtime.local import LocalProcesses
from kafka_soak.shared import java_client

# quota setting -> (the broker's quota sensor, the attribute it is judged on, its unit)
SENSORS = {"producer_byte_rate": ("Produce", "byte-rate", "B/s"), "consumer_byte_rate": ("Fetch", "byte-rate", "B/s"),
           "request_percentage": ("Request", "request-time", "%")}
PREFIX = "quota-meter-"
METER = kafka_jars.RESOURCES / "QuotaMeter.java"


def jmx_properties(port: int) -> dict[str, str]:
    """JVM properties that make a broker serve JMX on a loopback port, without authentication (loopback only)."""
    return {"com.sun.management.jmxremote": "true", "com.sun.management.jmxremote.port": str(port),
            "com.sun.management.jmxremote.rmi.port": str(port), "com.sun.management.jmxremote.host": "127.0.0.1",
            "java.rmi.server.hostname": "127.0.0.1", "com.sun.management.jmxremote.authenticate": "false",
            "com.sun.management.jmxremote.ssl": "false"}


def readings(quotas: list[Quota]) -> list[tuple[Quota, str]]:
    """Every (quota, setting) pair a run measures."""
    return [(quota, setting) for quota in quotas for setting in quota.settings()]


def start(processes: LocalProcesses, brokers: dict[int, int], quotas: list[Quota], out_dir: Path,
          on_host: Callable[[int, list[str]], list[str]] = lambda _node, command: command) -> None:
    """One meter per broker (``brokers``: node id -> JMX port) for every quota'd client's sensors, on the broker's host
    (``on_host``: where its loopback JMX port is)."""
    wanted = [f"{SENSORS[setting][0]}:{quota.client_id}" for quota, setting in readings(quotas)]
    if not wanted:
        return
    for node, port in brokers.items():
        name = f"{PREFIX}broker-{node}"
        if not processes.is_alive(name):
            processes.start(name, on_host(node, [kafka_jars.java_executable(), "-Xmx64m", java_client.NO_CONFIG_PROVIDERS,
                                                 str(METER), str(port), *wanted]), out_dir / f"broker-{node}.csv")


def stop(processes: LocalProcesses) -> None:
    for name in processes.names():
        if name.startswith(PREFIX):
            processes.stop(name, timeout=10)


def samples(path: Path, sensor: str, client_id: str) -> list[tuple[float, float]]:
    """(value, throttle ms) per second of one client's sensor from a broker's meter output."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split(",")
        if len(parts) < 5 or parts[1] != sensor or ",".join(parts[2:-2]) != client_id:
            continue
        try:
            value, throttle = float(parts[-2]), float(parts[-1])
        except ValueError:
            continue
        if not math.isnan(value):  # an average over no samples is NaN: nothing measured, nothing throttled
            rows.append((value, 0.0 if math.isnan(throttle) else throttle))
    return rows


def usage_per_setting(quotas: list[Quota], out_dir: Path, brokers: list[int]) -> list[dict[str, Any]]:
    """Per quota setting: the limit, and per broker the measured rate (median and peak while the client was
    active) and throttle time; ``bit`` says whether any broker throttled the client."""
    result = []
    for quota, setting in readings(quotas):
        sensor, attribute, unit = SENSORS[setting]
        limit = quota.settings()[setting]
        per_broker = {}
        for node in brokers:
            active = [(value, throttle) for value, throttle in samples(out_dir / f"broker-{node}.csv", sensor,
                                                                       quota.client_id) if value > 0]
            if active:
                values = [value for value, _ in active]
                per_broker[str(node)] = {
                    "samples": len(active), "median": round(statistics.median(values), 1),
                    "peak": round(max(values), 1), "throttle_ms_mean": round(statistics.fmean(t for _, t in active), 1),
                    "throttle_ms_max": round(max(t for _, t in active), 1)}
        worst = max(per_broker.values(), key=lambda b: b["median"], default=None)
        result.append({"client_id": quota.client_id, "setting": setting, "quota": limit, "unit": unit,
                       "measured": attribute, "achieved": worst["median"] if worst else None,
                       "peak": worst["peak"] if worst else None,
                       "throttle_ms_max": max((b["throttle_ms_max"] for b in per_broker.values()), default=0.0),
                       "bit": any(b["throttle_ms_max"] > 0 for b in per_broker.values()),
                       "per_broker": per_broker})
    return result


def describe(usage: dict[str, Any]) -> str:
    """One quota's outcome in a line, for the task log and the alert (on which cluster, in a broker version matrix)."""
    where = f"{usage['cluster']}: " if usage.get("cluster") else ""
    return (f"{where}quota {usage['client_id']} {usage['setting']}={usage['quota']:g} {usage['unit']}: the broker "
            f"measured {usage['measured']} {usage['achieved']} (median; peak {usage['peak']}) and throttled it up to "
            f"{usage['throttle_ms_max']} ms" + ("" if usage["bit"] else " (the quota never bit)"))
