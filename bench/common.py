"""What every benchmark shares: the --size switch, the machine and versions, statistics, result files.

Each benchmark writes ``bench/results/<name>.json`` (its figures, each with its baseline, the ratio, the
target and whether it was met) and ``bench/results/<name>.md`` (a section of docs/benchmarks.md that
carries its own command); ``bench/report.py`` puts the sections together.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "bench" / "results"
SIZES = ("quick", "large")
T = TypeVar("T")
EXCEPTION = re.compile(r"^\w+(?:\.\w+)*(?:Error|Exception): .*$", re.M)
sys.path.insert(0, str(ROOT / "plugins"))  # kafka_soak, also when a benchmark runs without `make bench`
sys.path.append(str(ROOT / "tests"))  # helpers a benchmark shares with the tests (support.spark_cluster)


def parse_size(description: str) -> str:
    """The ``--size quick|large`` every benchmark takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", choices=SIZES, default="quick")
    return parser.parse_args().size


def run_sizes(name: str, title: str, doc: str, sizes: dict[str, tuple[int, ...]],
              measure: Callable[[int], dict[str, Any]], figures: Callable[[dict[str, Any]], list[dict[str, Any]]],
              body: str) -> None:
    """A benchmark that measures each record count of its ``--size`` in turn: its results and section."""
    size = parse_size(doc.splitlines()[0])
    results = [measure(records) for records in sizes[size]]
    write_results(name, title, size, [f for run in results for f in figures(run)], body, {"runs": results})


def command(name: str, size: str) -> str:
    return f"python bench/{name}.py --size {size}"


def machine() -> dict[str, Any]:
    """Cores, memory and CPU model: the figures mean little without them."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem_kib = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal")))
    return {"nproc": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1), "cpu": cpu,
            "kernel": platform.release()}


PACE = "sum(range(10**8))"


def pace_s() -> float:
    """Seconds one Python process takes for ``PACE``: the speed of the core a benchmark had, beside its load
    average (the host's other guests slow this machine's cores without its load average showing it)."""
    return round(timeit.timeit(PACE, number=1), 2)


def versions() -> dict[str, str]:
    """Versions of what the figures depend on (from package metadata: importing GX alone takes seconds)."""
    import confluent_kafka

    found = {"python": platform.python_version()}
    for name in ("apache-airflow", "pyspark", "great-expectations", "confluent-kafka"):
        found[name] = metadata.version(name)
    found["librdkafka"] = confluent_kafka.libversion()[0]
    return found


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100), interpolated between the nearest ranks."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def slope(values: list[float]) -> float:
    """Least-squares slope of ``values`` over their index: how much they grow per step."""
    return statistics.linear_regression(range(len(values)), values).slope


def figure(name: str, value: float, unit: str, baseline: float | None, target: str, met: bool | None,
           note: str = "") -> dict[str, Any]:
    """One measured figure next to what the simplest alternative achieved in the same run."""
    ratio = round(value / baseline, 3) if baseline else None
    return {"name": name, "value": round(value, 3), "unit": unit,
            "baseline": None if baseline is None else round(baseline, 3), "ratio": ratio, "target": target,
            "met": met, "note": note}


STATUS_ORDER = ("failed", "inconclusive", "passed")  # a release is as bad as its worst judged output


def matrix_run(dag_id: str, conf: dict[str, Any], runs: Path, timeout: float) -> dict[str, Any]:
    """One run of a scenario that compares releases (in the benchmark's ``runs`` directory): per release its worst
    status and its anomaly counts over its judged outputs (``counts@4.2.1`` and ``sums@4.2.1`` are 4.2.1's), plus
    the run's outcome."""
    test = DagsTest(dag_id, conf, runs)
    run_dir, _, code, wall = test.run(lambda _: None, timeout)
    verdict_file = run_dir / "verdict.json"
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
    versions: dict[str, dict[str, Any]] = {}
    for row in verdict.get("matrix", []):
        version = versions.setdefault(row["version"].rpartition("@")[2], {"status": "passed"})
        version["status"] = min(version["status"], row["status"], key=STATUS_ORDER.index)
        for anomaly, count in row["anomalies"].items():
            version[anomaly] = version.get(anomaly, 0) + count
    row = {"run_dir": str(run_dir), "wall_s": round(wall, 1), "outcome": test.outcome(code), "versions": versions}
    print(f"{dag_id}: {json.dumps(row)}", flush=True)
    return row


def caught(run: dict[str, Any], affected: str, signs: tuple[str, ...]) -> bool:
    """The affected release failed with its bug's anomalies (``signs``)."""
    found = run["versions"].get(affected, {})
    return found.get("status") == "failed" and any(found.get(anomaly) for anomaly in signs)


def side_by_side(dag_id: str, rows: list[dict[str, Any]], affected: str, fixed: str,
                 caught: Callable[[dict[str, Any]], bool], what: str = "Kafka Streams"
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """The figures and the per-run table of a scenario that runs a release (of ``what``) with a bug beside one without
    it, each run's ``versions`` holding each release's status and anomaly counts: how often ``caught`` (most runs is
    the target) and how often the fixed release passed (every run)."""
    judged = [r for r in rows if r["versions"]]
    hits = sum(map(caught, judged))
    clean = sum(r["versions"].get(fixed, {}).get("status") == "passed" for r in judged)
    figures = [figure(f"{dag_id}: {what} {affected} caught", hits / max(1, len(judged)), "of runs", None,
                      "most runs (> 0.5)", hits / max(1, len(judged)) > 0.5, f"{hits} of {len(judged)} runs with a verdict"),
               figure(f"{dag_id}: {what} {fixed} passed", clean / max(1, len(judged)), "of runs", None,
                      "every run (1.0)", clean == len(judged) and bool(judged), f"{clean} of {len(judged)} runs with a verdict")]
    lines = [f"### {dag_id}\n\n| run | wall | {what} {affected} | {what} {fixed} |\n|---|---|---|---|"]
    for n, r in enumerate(rows, start=1):
        cells = []
        for version in (affected, fixed):
            v = r["versions"].get(version)
            found = {a: c for a, c in (v or {}).items() if a != "status" and c}
            cells.append(f"{v['status']} {found or ''}".strip() if v else f"no verdict ({r['outcome']})")
        lines.append(f"| {n} | {r['wall_s']:.0f} s | {cells[0]} | {cells[1]} |")
    return figures, lines


def figures_table(figures: list[dict[str, Any]]) -> str:
    rows = ["| figure | value | baseline | ratio | target | met |", "|---|---|---|---|---|---|"]
    for f in figures:
        baseline = "—" if f["baseline"] is None else f"{f['baseline']:g} {f['unit']}"
        ratio = "—" if f["ratio"] is None else f"{f['ratio']:g}×"
        met = {True: "yes", False: "**no**", None: "—"}[f["met"]]
        rows.append(f"| {f['name']} | {f['value']:g} {f['unit']} | {baseline} | {ratio} | {f['target'] or '—'} "
                    f"| {met} |")
    return "\n".join(rows)


def write_results(name: str, title: str, size: str, figures: list[dict[str, Any]], body: str,
                  extra: dict[str, Any] | None = None, cmd: str | None = None) -> None:
    """``bench/results/<name>.json`` and the section ``bench/results/<name>.md``; ``cmd``: the command that gave them,
    where it is not the benchmark's ``--size`` form."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    cmd = cmd or command(name, size)
    data = {"benchmark": name, "size": size, "command": cmd, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                          time.gmtime()),
            "machine": machine(), "pace_s": pace_s(), "figures": figures, **(extra or {})}
    (RESULTS_DIR / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    section = (f"## {title}\n\n`{cmd}` ({data['finished_at']}; load average {load} when it finished; "
               f"`{PACE}` in {data['pace_s']} s)\n\n"
               f"{figures_table(figures)}\n\n{body.strip()}\n")
    (RESULTS_DIR / f"{name}.md").write_text(section)
    print(section)


def remeasured(name: str, env: str, known: dict[str, Any], what: str) -> tuple[list[str], dict[str, Any]]:
    """What a benchmark of several parts measures this time (``env``, e.g. ``BUGS="a b"``: those parts again; else every
    part of ``known``) and the runs its results file keeps of the others, so that one part can be measured again
    alone."""
    chosen = os.environ.get(env, "").split() or list(known)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise SystemExit(f"{env}: {unknown} are no {what}; known: {', '.join(known)}")
    earlier = RESULTS_DIR / f"{name}.json"
    return chosen, json.loads(earlier.read_text())["runs"] if earlier.exists() else {}


def runs_dir(name: str) -> Path:
    """A fresh runs directory for one benchmark run (its evidence stays there for a look afterwards)."""
    base = Path(os.environ.get("BENCH_RUNS_DIR", tempfile.gettempdir())) / "kafka-soak-bench"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))


# Two ``airflow dags test`` of one DAG that start at once on an Airflow database that has not seen it both insert its
# row, and one fails (``UNIQUE constraint failed: dag.dag_id``): a benchmark's runs side by side start one at a time.
STARTING = threading.Lock()


@dataclass
class DagsTest:
    """An ``airflow dags test`` run in the background, with its own runs directory; runs in threads of one benchmark
    start one after the other (``STARTING``) and then run side by side."""

    dag_id: str
    conf: dict[str, Any]
    runs: Path

    def run(self, during: Callable[[Path], T], timeout: float) -> tuple[Path, T, int, float]:
        """Run the DAG; once its program is planned, call ``during(run_dir)`` alongside it. Returns the run
        directory, what ``during`` returned, the exit code and the wall time (s). A run that overstays
        ``timeout`` is killed, and so is what it started."""
        self.log = self.runs / "dags-test.log"
        self.started = time.time()
        self.earlier = set((self.runs / self.dag_id).glob("*/"))  # runs of this dag_id already in the runs dir
        from kafka_soak.cli import as_owner
        from kafka_soak.factory import ONLY_ENV

        env, conf = as_owner(self.conf, {**os.environ, "SOAK_RUNS_DIR": str(self.runs), ONLY_ENV: self.dag_id})
        with STARTING:  # until the run has its directory, and the DAG its row
            with self.log.open("w") as out:
                proc = subprocess.Popen(["airflow", "dags", "test", self.dag_id, "-c", json.dumps(conf)],
                                        env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                run_dir = self._run_dir(timeout=300)
            except BaseException:
                self._end(proc)
                raise
        try:
            alongside = during(run_dir)
            code = proc.wait(timeout=max(timeout - (time.time() - self.started), 1))
            return run_dir, alongside, code, time.time() - self.started
        finally:
            self._end(proc)

    def _end(self, proc: subprocess.Popen) -> None:
        """Kill a run that is still running (it overstayed, or never planned its program), and what it started."""
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            self.stop_leftovers()

    def _run_dir(self, timeout: float) -> Path:
        """The run's directory once the run has planned its program (``program.json`` exists); one of the runs dir's
        earlier runs (a benchmark's runs may share one, as nightly runs share a history) is not it."""
        latest = self.runs / self.dag_id / "latest"
        deadline = time.monotonic() + timeout
        while latest.resolve() in self.earlier or not (latest / "program.json").exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no program.json after {timeout:.0f} s; see {self.log}")
            time.sleep(0.02)
        return latest.resolve()

    def outcome(self, code: int) -> str:
        """The exit code, with the error the run ended on when it is not 0."""
        errors = EXCEPTION.findall(self.log.read_text()) if code else []
        return f"exit code {code}" + (f" (the run ended with `{errors[-1]}`)" if errors else "")

    def stop_leftovers(self) -> None:
        """A killed run skips its teardown: stop the broker, generator and instances it registered."""
        from kafka_soak.infra.runtime.local import LocalProcesses

        for run_dir in (self.runs / self.dag_id).glob("*/processes"):
            processes = LocalProcesses(run_dir.parent)
            for name in processes.names():
                processes.kill(name)
