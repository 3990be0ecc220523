"""``make soak``: check the params, run a scenario DAG with ``airflow dags test``, print the verdict.

    python -m kafka_soak.cli soak SCENARIO [--conf JSON]
    python -m kafka_soak.cli kafka-jars [VERSION]      # fetch Apache Kafka's jars into the cache (make setup)
    python -m kafka_soak.cli streams-app [VERSION]     # build the Kafka Streams app against VERSION (make setup)
    python -m kafka_soak.cli worker-venv VERSION       # the reference worker's virtualenv of confluent-kafka VERSION
    python -m kafka_soak.cli spark-kafka-jars          # fetch Spark's Kafka source for the checker (make setup)

Bad params are refused here with one clear line (which param, what is allowed) before Airflow starts;
the run's own log lines (program, generator, drain, verdict) are shown, the full Airflow output is kept
in the run directory as ``dags-test.log``. Exit code 0 only when the verdict passed.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from kafka_soak import params as soak_params
from kafka_soak import run_plan
from kafka_soak.plan import ParamsError
from kafka_soak.shared import rundir

SCENARIOS_DIR = rundir.PROJECT_ROOT / "dags" / "scenarios"
# Lines worth a person's attention while the soak runs: our own loggers, task failures, the run's end.
SHOWN = re.compile(r"\[kafka_soak|ProgramStepOperator|ALERT|Task failed|DagRun Finished|verdict:|"
                   r"\[error|Error|Exception")
STRUCTLOG = re.compile(r"^(\S+)\s+\[(\w+)\s*\]\s+(.*?)\s+\[[A-Za-z_][\w.]*\](?:\s+loc=\S+)?.*$")


class UsageError(Exception):
    pass


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS_DIR.glob("*.yaml"))


def check_conf(scenario: str, conf: dict[str, Any]) -> dict[str, Any]:
    """Check ``conf`` as a trigger of the DAG is checked (Airflow validates it against the Param schemas, then
    check_params admits the run); returns the params."""
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.sdk.exceptions import ParamValidationError

    from kafka_soak import preflight
    from kafka_soak.admission import Admission, ScenarioError, load_scenario

    path = SCENARIOS_DIR / f"{scenario}.yaml"
    if not path.exists():
        raise UsageError(f"unknown scenario {scenario!r}; available: {', '.join(scenario_names())}")
    unknown = sorted(set(conf) - set(soak_params.DEFAULTS))
    if unknown:
        raise UsageError(f"unknown params {unknown}; known: {', '.join(sorted(soak_params.DEFAULTS))}")
    try:
        admission = Admission.for_scenario(load_scenario(path))
    except ScenarioError as exc:
        raise UsageError(f"scenario {exc}") from None
    params = ParamsDict(copy.deepcopy(admission.params))
    try:
        params.update(conf)
        values = params.validate()
    except ParamValidationError as exc:
        first = str(exc).splitlines()[0]
        name = next((k for k in conf if f"param {k}:" in first), None)
        allowed = soak_params.PARAM_SCHEMAS.get(name, {}).get("description", "") if name else ""
        raise UsageError(first + (f" (param {name}: {allowed})" if allowed else "")) from None
    try:
        admission.admit(conf, values)
    except (ParamsError, *preflight.ERRORS) as exc:
        raise UsageError(str(exc)) from None
    return values


def show(line: str) -> None:
    match = STRUCTLOG.match(line)
    if match:
        ts, level, message = match.groups()
        print(f"{ts[11:19]} {level:<7} {message}", flush=True)
    else:
        print(line.rstrip(), flush=True)


def run(scenario: str, conf: dict[str, Any]) -> int:
    from kafka_soak.factory import ONLY_ENV

    airflow = shutil.which("airflow") or str(Path(sys.executable).parent / "airflow")
    launch = uuid.uuid4().hex

    def this_run() -> Path | None:
        """The run directory this command's Airflow process made (by its ``launch``), not the newest of the DAG: a
        scheduled or triggered run of the same DAG may run beside it."""
        return own_run(rundir.runs_root() / scenario, launch)

    with tempfile.NamedTemporaryFile("w+", prefix="dags-test-", suffix=".log", delete=False) as full_log:
        proc = subprocess.Popen([airflow, "dags", "test", scenario, "-c", json.dumps(conf)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1,
                                env={**os.environ, rundir.LAUNCH_ENV: launch, ONLY_ENV: scenario})
        previous = signal.signal(signal.SIGTERM, interrupted)
        try:
            for line in proc.stdout:
                full_log.write(line)
                if SHOWN.search(line):
                    show(line)
            code = proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:  # a task waiting for a trigger does not always heed SIGTERM
                proc.kill()
                proc.wait(20)
            run_dir = this_run()
            print(f"\ninterrupted: stopping what the run started{f' ({run_dir})' if run_dir else ''}", flush=True)
            if run_dir is not None:
                from kafka_soak import reaper, teardowns  # the run's own modules: not needed before a run

                why = "make soak was interrupted"
                for name, code in {**teardowns.from_files(run_dir, why), **reaper.reap(run_dir, why)}.items():
                    print(f"  stopped {name} (exit code {code})", flush=True)
                shutil.move(full_log.name, run_dir / rundir.DAGS_TEST_LOG)
            return 130
        finally:
            signal.signal(signal.SIGTERM, previous)
    run_dir = this_run()
    if run_dir is None:
        print(f"\nthe run was refused or stopped before it recorded its params; full Airflow output: {full_log.name}")
        return code or 1
    shutil.move(full_log.name, run_dir / rundir.DAGS_TEST_LOG)
    return report_verdict(run_dir, code)


def own_run(dag_dir: Path, launch: str) -> Path | None:
    """The run directory under ``dag_dir`` whose params.json names ``launch`` (the newest attempt, should there be
    several)."""
    found = [d for d in dag_dir.glob("*") if d.is_dir() and not d.is_symlink()
             and (rundir.read_json(d / rundir.PARAMS) or {}).get("launch") == launch] if dag_dir.is_dir() else []
    return max(found, key=lambda d: d.stat().st_mtime, default=None)


def interrupted(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def report_verdict(run_dir: Path, dags_test_code: int) -> int:
    verdict_path = run_dir / rundir.VERDICT
    print()
    if not verdict_path.exists():
        print(f"NO VERDICT: the run stopped before validation (airflow dags test exit code {dags_test_code}).")
        print(f"  run directory: {run_dir}\n  Airflow output: {run_dir / rundir.DAGS_TEST_LOG}")
        if (run_dir / rundir.REPORT).exists():
            print(f"  report: {run_dir / rundir.REPORT}")
        return dags_test_code or 1
    verdict = json.loads(verdict_path.read_text())
    records = verdict["records"]
    print(f"VERDICT: {verdict['status'].upper()}  (input {records['input']}, output {records['output']}, "
          f"expected {records['expected_input']})")
    if verdict.get("matrix"):
        names = list(verdict["anomalies"])
        labels = [row.get("label") or f"Kafka Streams {row['version']}" for row in verdict["matrix"]]
        width = max(26, *(len(label) + 2 for label in labels))
        print(f"  {'app':<{width}}{'status':<14}" + "".join(f"{n:>16}" for n in names))
        for label, row in zip(labels, verdict["matrix"], strict=True):
            print(f"  {label:<{width}}{row['status'].upper():<14}"
                  + "".join(f"{row['anomalies'].get(n, 0):>16}" for n in names))
    else:
        width = max(map(len, verdict["anomalies"]), default=0)
        for name, count in verdict["anomalies"].items():
            print(f"  {name:<{width}} {count}")
    for reason in verdict.get("inconclusive_reasons", []):
        print(f"  inconclusive: {reason}")
    for name, rows in verdict.get("samples", {}).items():
        print(f"  e.g. {name}: {json.dumps(rows[0], default=str)}")
    print(f"  run directory: {run_dir}\n  data docs:     {verdict['data_docs']}")
    if (run_dir / rundir.REPORT).exists():
        print(f"  report:        {run_dir / rundir.REPORT}")
    return 0 if verdict["status"] == "passed" else 1


def build_cached(what: str, version: str | None) -> int:
    """``kafka-jars``/``streams-app``/``worker-venv``/``spark-kafka-jars``: fetch or build into the checkout's cache;
    print where it is."""
    from kafka_soak.backends import kafka_jars
    from kafka_soak.checker import spark_kafka
    from kafka_soak.clients.reference import releases, streams
    from kafka_soak.toolchain.maven import BuildError

    try:
        if what == "kafka-jars":
            print(kafka_jars.resolve(version or soak_params.KAFKA_VERSION))
        elif what == "spark-kafka-jars":
            print(spark_kafka.resolve(version)[0].parent)
        else:
            target, seconds = (releases.build(version) if what == "worker-venv" else
                               streams.build(version or soak_params.STREAMS_VERSION))
            print(f"{target}" + (f" (built in {seconds:.1f} s)" if seconds else " (cached)"))
    except BuildError as exc:
        print(f"kafka-soak: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-soak", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    soak = sub.add_parser("soak", help="run a scenario DAG once on this machine")
    soak.add_argument("scenario")
    soak.add_argument("--conf", default="{}", help="params as JSON, e.g. '{\"program\": \"1 2 3 1\"}'")
    jars = sub.add_parser("kafka-jars", help="fetch Apache Kafka's jars of a version into the checkout's cache")
    jars.add_argument("version", nargs="?", default=None)
    app = sub.add_parser("streams-app", help="build the Kafka Streams reference app against a Kafka Streams version")
    app.add_argument("version", nargs="?", default=None)
    venv = sub.add_parser("worker-venv", help="build the reference worker's virtualenv of a confluent-kafka release")
    venv.add_argument("version")
    source = sub.add_parser("spark-kafka-jars", help="fetch Spark's own Kafka source (for the checker) into the "
                            "checkout's cache")
    source.add_argument("version", nargs="?", default=None, help="a Spark version (default: the installed pyspark's)")
    args = parser.parse_args(argv)
    if args.command in ("kafka-jars", "streams-app", "worker-venv", "spark-kafka-jars"):
        return build_cached(args.command, args.version)
    try:
        try:
            conf = json.loads(args.conf or "{}")
        except json.JSONDecodeError as exc:
            raise UsageError(f"--conf is not valid JSON ({exc.msg} at column {exc.colno}): {args.conf}") from None
        except ValueError:  # Python refuses to read an integer of more than sys.get_int_max_str_digits() digits
            raise UsageError(f"--conf holds a number too long to read (at most {sys.get_int_max_str_digits()} "
                             "digits)") from None
        except RecursionError:
            raise UsageError("--conf is nested too deeply to read") from None
        if not isinstance(conf, dict):
            raise UsageError(f"--conf must be a JSON object of params, got {type(conf).__name__}")
        env, conf = as_owner(conf, dict(os.environ))
        os.environ.update(env)  # check_conf builds the DAG as the run will
        check_conf(args.scenario, conf)
    except UsageError as exc:
        print(f"kafka-soak: {exc}", file=sys.stderr)
        return 2
    return run(args.scenario, conf)


def as_owner(conf: dict[str, Any], environ: dict[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    """(environment, trigger conf) of a run started from this machine's shell. Whoever runs it owns the machine, so
    the params only a deployment sets (app command, images, Docker engine, connections, a shared cluster's quotas) go
    in the trigger conf as the deployment allows them (``SOAK_TRIGGER_ALLOW`` lists each value given), where Airflow's
    trigger path would otherwise refuse them; like the rest they override the scenario file's defaults (a scenario's
    quotas never reach the shared cluster the command chose)."""
    from kafka_soak.admission import ALLOW_ENV, DEFAULTS_ENV, env_object, schema_problem

    try:
        current, malformed = env_object(DEFAULTS_ENV, environ), ""
        allowed = env_object(ALLOW_ENV, environ)
    except ValueError as exc:  # the run refuses itself with this unless the conf needs the variable
        current, allowed, malformed = {}, {}, str(exc)
    deployment, rest = run_plan.split(conf, conf.get("backend") or current.get("backend") or
                                         soak_params.DEFAULTS["backend"])
    if not deployment:
        return dict(environ), rest
    invalid = [f"param {name}: {problem}" for name, value in deployment.items() if (problem := schema_problem(name, value))]
    invalid += [f"{ALLOW_ENV}: {name} must list the values a trigger may choose" for name in deployment
                if not isinstance(allowed.get(name, []), list)]
    if invalid or malformed:
        raise UsageError("; ".join(invalid or [malformed]))
    allowed = {**allowed, **{name: [*allowed.get(name, []), value] for name, value in deployment.items()}}
    return {**environ, ALLOW_ENV: json.dumps(allowed)}, {**rest, **deployment}


if __name__ == "__main__":
    sys.exit(main())
