"""What the run's processes used over the run (``resources/`` of a run directory), and the verdict on growth.

``infra/resource_sampler.py`` writes one line per process and sample into ``samples.jsonl`` (``Sample``) and the run
directory's and each broker's data size into ``disk.jsonl``; the JVMs the run starts log their collections into
``gc/<pid>.log`` (``gc_option``), from which a sample takes the heap in use after the last collection. The checker
judges growth (``growth``), the report draws the samples (``bucketed``, ``downsampled``).

A process life is one process: an instance restarted is a new life, judged on its own. Its running time ends when the
suite asked it to stop or killed it (``asked`` of its ``stop`` or ``kill`` event): a process shutting down gives its
memory back, which is no sign of health. Growth is judged after a warm-up: a life's samples after it are cut into
quarters by time, and a resource *keeps rising* when its floor (each quarter's lowest sample: what a collection or a
quiet moment leaves, where a leak shows and a saw-tooth does not) never falls from one quarter to the next and ends
above where it began (a leak that grows with the load stops when the load does). It grows beyond its bounds when it
keeps rising and both its rate (the Theil-Sen slope: the median of the slopes between pairs of samples, which spikes
do not move) and its rise (the last quarter's floor above the first's) pass theirs. Standard library only: the Spark
job imports it.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any, TypeVar

from kafka_soak.shared import java_client

DIR = "resources"
SAMPLES, DISK, GC = "samples.jsonl", "disk.jsonl", "gc"
# resource -> unit; what the verdict judges on an app instance (CPU is drawn, not judged: it follows the load)
JUDGED = {"rss_mb": "MB", "heap_mb": "MB", "threads": "threads", "fds": "file descriptors"}
LABELS = {"rss_mb": "RSS", "heap_mb": "heap after GC", "threads": "threads", "fds": "open file descriptors",
          "cpu": "CPU (cores)"}
APP_PREFIX = "instance-"  # the process names of the app's instances (``Subject.process``)
BROKER_PREFIX = "kafka-"
SUPERVISOR = ".supervisor"  # a supervisor's samples are named after its process's name and this: the suite's, not the app's
MIN_SAMPLES = 8  # of a life after the warm-up: fewer cannot show a trend in four quarters
MAX_PAIRS_POINTS = 240  # the slope is taken on at most this many evenly spread samples (pairs grow as the square)
# A unified-logging line of a collection: "... GC(12) Pause Young (Normal) (G1 Evacuation Pause) 24M->8M(64M) 3.1ms"
GC_LINE = re.compile(r"GC\(\d+\) .*?(\d+)([KMG])->(\d+)([KMG])\(\d+[KMG]\)")
UNIT_MB = {"K": 1 / 1024, "M": 1.0, "G": 1024.0}
DRAWN = (*JUDGED, "cpu")  # what the report draws of each process
# What the verdict keeps of each judged life's trend (``growth``'s rows), for the history page's growth per night
GROWTH_FIELDS = ("process", "pid", "resource", "unit", "since", "per_hour", "rise", "rising", "grows")
Item = TypeVar("Item")


def gc_option(run_dir: Path) -> str | None:
    """The JVM option that makes a JVM of the run log its collections where samples read them (``%p``: its pid), or
    None where the path cannot be given to ``-Xlog`` (a colon separates its fields; a blank ends an option in
    ``JAVA_TOOL_OPTIONS``): the heap is then not sampled, the rest is."""
    path = run_dir / DIR / GC
    if ":" in str(path) or not java_client.is_option(str(path)):
        return None
    path.mkdir(parents=True, exist_ok=True)
    return f"-Xlog:gc:file={path}/%p.log:time"


def heap_after_gc(lines: list[str]) -> float | None:
    """The heap in use after the last collection these GC log lines show, in MB."""
    for line in reversed(lines):
        if match := GC_LINE.search(line):
            return round(float(match.group(3)) * UNIT_MB[match.group(4)], 1)
    return None


def lives(samples: list[dict[str, Any]]) -> dict[tuple[str, int, float], list[dict[str, Any]]]:
    """The samples of each process life (name, pid, start time), in time order."""
    by_life: dict[tuple[str, int, float], list[dict[str, Any]]] = {}
    for sample in sorted(samples, key=lambda s: s["at"]):
        by_life.setdefault((sample["process"], sample["pid"], sample["started"]), []).append(sample)
    return by_life


def theil_sen(points: list[tuple[float, float]]) -> float:
    """The median slope between pairs of points (per second), on at most ``MAX_PAIRS_POINTS`` of them."""
    step = max(1, -(-len(points) // MAX_PAIRS_POINTS))
    spread = points[::step]
    return statistics.median((v2 - v1) / (t2 - t1) for (t1, v1), (t2, v2) in combinations(spread, 2) if t2 > t1)


def trend(points: list[tuple[float, float]]) -> dict[str, Any] | None:
    """A resource's course over a life after its warm-up: quarters' floors, whether it keeps rising, its rate per
    hour and its rise; None with fewer than ``MIN_SAMPLES`` points."""
    if len(points) < MIN_SAMPLES:
        return None
    start, end = points[0][0], points[-1][0]
    quarter = (end - start) / 4 or 1.0
    buckets: list[list[float]] = [[], [], [], []]
    for t, v in points:
        buckets[min(3, int((t - start) / quarter))].append(v)
    if not all(buckets):
        return None
    floors = [min(b) for b in buckets]
    return {"floors": floors, "rising": floors[3] > floors[0] and all(a <= b for a, b in itertools.pairwise(floors)),
            "per_hour": theil_sen(points) * 3600, "rise": floors[3] - floors[0], "from": start, "until": end}


def ends(events: list[dict[str, Any]]) -> dict[int, list[float]]:
    """When the suite asked each process (by pid) to stop or killed it, from the run's events (``stop``/``kill``
    events with ``asked``; a pid the machine gave out again has one time per life)."""
    asked: dict[int, list[float]] = {}
    for event in events:
        if event.get("event") in ("stop", "kill") and event.get("pid") is not None and "asked" in event:
            asked.setdefault(event["pid"], []).append(event["asked"])
    return asked


def judged_process(name: str, brokers: bool) -> bool:
    """Whether a process's growth is judged: the app's instances, and the brokers when the run asks (not the suite's
    supervisors of either)."""
    return not name.endswith(SUPERVISOR) and (name.startswith(APP_PREFIX) or (brokers and name.startswith(BROKER_PREFIX)))


def working_since(pid: int, started: float, ready: dict[str, float] | None) -> float:
    """When a life (``pid``, ``started``) got to work, where its warm-up begins: ``ready``'s time for it (``health``'s,
    by pid), else its start; never before its start (a pid given out again keeps an older life's time)."""
    return max(started, (ready or {}).get(str(pid), started))


def growth(samples: list[dict[str, Any]], bounds: dict[str, Any], asked: dict[int, list[float]] | None = None,
           ready: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """One row per judged process life and resource with a trend over its running time after the warm-up (``bounds``:
    the run's ``resource_growth`` param; ``asked``: ``ends``; ``ready``: when a life, by pid, first got to work, which
    is where its warm-up begins, else at its start): its rate, rise, whether it keeps rising and whether it ``grows``
    beyond both bounds, with the last sample that shows it."""
    rows = []
    for (process, pid, started), life in lives(samples).items():
        if not judged_process(process, bounds.get("brokers", False)):
            continue
        end = min((t for t in (asked or {}).get(pid, []) if t >= started), default=float("inf"))
        warm = [s for s in life if working_since(pid, started, ready) + bounds["warmup_s"] <= s["at"] < end]
        for resource, unit in JUDGED.items():
            points = [(s["at"], float(s[resource])) for s in warm if s.get(resource) is not None]
            course = trend(points)
            if course is None:
                continue
            per_hour_bound, rise_bound = bounds["per_hour"][resource], bounds["total"][resource]
            rows.append({"process": process, "pid": pid, "resource": resource, "unit": unit,
                         "per_hour": round(course["per_hour"], 2), "rise": round(course["rise"], 2),
                         "rising": course["rising"], "samples": len(points), "since": course["from"],
                         "until": course["until"], "last": points[-1][1],
                         "grows": course["rising"] and course["per_hour"] > per_hour_bound
                         and course["rise"] > rise_bound,
                         "bound": f"{per_hour_bound:g} {unit}/h and {rise_bound:g} {unit} in all"})
    return rows


def steepest(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per resource, the row of the app instance that rose fastest (a run's growth in one line of the history)."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["process"].startswith(APP_PREFIX) and row["per_hour"] > found.get(row["resource"], {"per_hour": 0})["per_hour"]:
            found[row["resource"]] = row
    return {resource: found[resource] for resource in JUDGED if resource in found}


def describe(row: dict[str, Any]) -> str:
    """A growth row in words, as the verdict's sample and the alert say it."""
    return (f"{row['process']} (pid {row['pid']}): {LABELS[row['resource']]} rose {row['rise']:g} {row['unit']} at "
            f"{row['per_hour']:g} {row['unit']}/h, never falling back over its life after the warm-up, to "
            f"{row['last']:g} (bound {row['bound']})")


def bucketed(items: list[Item], at: Callable[[Item], float], buckets: int) -> list[list[Item]]:
    """Time-ordered ``items`` (``at``: an item's time) in at most ``buckets`` groups, each of an equal share of their
    time span (each item alone where they are that few), in order."""
    if len(items) <= buckets:
        return [[item] for item in items]
    start, span = at(items[0]), (at(items[-1]) - at(items[0])) or 1.0
    grouped: dict[int, list[Item]] = {}
    for item in items:
        grouped.setdefault(min(buckets - 1, int((at(item) - start) / span * buckets)), []).append(item)
    return [grouped[i] for i in sorted(grouped)]


def downsampled(points: list[tuple[float, float]], buckets: int) -> list[tuple[float, float, float]]:
    """At most ``buckets`` (time, low, high) triples for a chart: each bucket's minimum and maximum, so a spike or a
    leak's climb survives and hours of samples stay a few hundred points."""
    return [(group[0][0], min(v for _, v in group), max(v for _, v in group))
            for group in bucketed(points, lambda point: point[0], buckets)]
