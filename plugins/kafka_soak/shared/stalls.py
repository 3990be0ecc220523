"""A stalled thread (program token ``sN@POINT:SECONDS``): how the harness arms a stall in an instance and how the
instance says when it stalled and resumed. One protocol for both sides, kept in files of the instance's own stall
directory, so that it needs no port and no signal and works the same for a JVM (the rules of the Java agent the
suite attaches, ``toolchain/stall_agent.py``) and for a Python app (the reference worker calls ``Stalls.at``).

- The step arms a stall by creating ``step-<i>`` (the point and the seconds, as JSON) in the directory.
- The first thread of the instance to pass the point *deletes* that file: deleting is atomic, so exactly one thread
  stalls, once, whichever instance of the step's instance (a restart included) gets there first. It writes
  ``step-<i>.trace``: ``stalled <epoch ms> <thread>``, then ``resumed <epoch ms>`` when its seconds are over.
- The drain deletes the arms no thread reached (``disarm``) and reads the traces (``traced``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_soak.shared import rundir

log = logging.getLogger(__name__)

# The environment variable that gives an instance its stall directory (set only for a run whose program stalls it).
DIR_ENV = "SOAK_STALL_DIR"
# How an app can be stalled (profile field ``stall``): through the Java agent the suite puts in JAVA_TOOL_OPTIONS, or
# by the app itself keeping this protocol at the named points (the reference worker does); "" cannot be.
JVM, CONTRACT = "jvm", "contract"
WAYS = (JVM, CONTRACT)
# The named points, as every way to stall knows them.
POINTS = {"commit": "as the app commits its transaction, after its offsets were added (KafkaProducer#commitTransaction)",
          "process": "as the app hands the producer a record while its open transaction already holds one "
                     "(KafkaProducer#send): in the middle of processing, with a transaction the broker can time out"}
# The points of a broker's thread (``sbN@POINT:SECONDS``), stalled through the same agent in the broker's JVM.
BROKER_POINTS = {"append": "as a request handler thread of the broker appends a client's transactional records to a "
                           "partition where their transaction is already ongoing, so the broker asked no verification "
                           "(UnifiedLog#appendAsLeader, before it takes the log's lock): the coordinator can abort the "
                           "transaction and write its marker before the records are appended"}
# A JVM app's own point: a method of a class, fully qualified, which the agent's rule names as it is (nothing else
# can be in it).
METHOD_POINT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+#[A-Za-z_$][A-Za-z0-9_$]*")
MAX_SECONDS = 3600
STALLED, RESUMED = "stalled", "resumed"


@dataclass(frozen=True)
class Stall:
    """One stall of the program: the step that arms it, its instance (or ``broker``, for a broker's thread), where its
    thread stops and for how long."""

    step: int
    instance: int
    point: str
    seconds: int
    broker: int = 0


def broker_dir(run_dir: Path, broker: int) -> Path:
    """Where the program arms the stalls of a broker of the run's cluster, and the broker's JVM traces them."""
    return run_dir / rundir.STALLS / f"broker-{broker}"


def arm_path(directory: Path, step: int) -> Path:
    return directory / f"step-{step}"


def trace_path(directory: Path, step: int) -> Path:
    return directory / f"step-{step}.trace"


def arm(directory: Path, stall: Stall) -> Path:
    """Arm ``stall`` in an instance's directory (whole or not at all: written aside, then renamed)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = arm_path(directory, stall.step)
    staging = path.with_name(f".{path.name}.new")
    staging.write_text(json.dumps({"point": stall.point, "seconds": stall.seconds}))
    os.replace(staging, path)
    return path


def armed(directory: Path) -> list[tuple[int, Path]]:
    """The stalls armed in ``directory`` that no thread took yet: each one's step and arm file."""
    return [(int(path.name[5:]), path) for path in sorted(directory.glob("step-*"))
            if path.suffix == "" and path.name[5:].isdigit()]


def disarm(directory: Path) -> list[int]:
    """Remove the stalls armed in ``directory`` that no thread reached; returns their steps."""
    gone = armed(directory)
    for _step, path in gone:
        path.unlink(missing_ok=True)
    return [step for step, _path in gone]


def traced(directory: Path) -> list[dict[str, float | int | str | None]]:
    """What the instance's threads wrote of the stalls they took: step, thread, when it stalled and resumed (epoch
    s; ``resumed`` None while it stalls, or when the instance ended during its stall)."""
    found = []
    for path in sorted(directory.glob("step-*.trace")):
        stall: dict[str, float | int | str | None] = {"step": int(path.name[5:].split(".")[0]), "thread": "",
                                                      "stalled": None, "resumed": None}
        for line in path.read_text(errors="replace").splitlines():
            word, _, rest = line.partition(" ")
            stamp, _, thread = rest.partition(" ")
            if word in (STALLED, RESUMED) and stamp.isdigit():
                stall[word] = int(stamp) / 1000
                stall["thread"] = thread or stall["thread"]
        if stall["stalled"] is not None:
            found.append(stall)
    return found


class Stalls:
    """The protocol's app side for a Python app: ``at(point)`` stalls the calling thread if a stall of ``point`` is
    armed (a no-op without a stall directory, as in a run whose program stalls nothing)."""

    def __init__(self, directory: str | None = None) -> None:
        directory = directory if directory is not None else os.environ.get(DIR_ENV)
        self.directory = Path(directory) if directory else None

    def at(self, point: str) -> None:
        if self.directory is None:
            return
        for step, path in armed(self.directory):
            try:
                spec = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # taken meanwhile
            if spec["point"] != point:
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                continue  # another thread took it
            self.stall(step, point, int(spec["seconds"]))
            return

    def stall(self, step: int, point: str, seconds: int) -> None:
        assert self.directory is not None
        thread = threading.current_thread().name
        log.warning("stalling thread %s at %s for %d s (program step %d)", thread, point, seconds, step)
        with trace_path(self.directory, step).open("a", encoding="utf-8") as trace:
            trace.write(f"{STALLED} {time.time_ns() // 1_000_000} {thread}\n")
            trace.flush()
            time.sleep(seconds)
            trace.write(f"{RESUMED} {time.time_ns() // 1_000_000} {thread}\n")
        log.warning("thread %s resumed after its %d s stall at %s", thread, seconds, point)
