"""The soak's checker: read the run's topics with Spark, judge them with Great Expectations, write the verdict.

spark-submit --jars <Spark's Kafka source> --py-files <its modules> spark_jobs/validate_soak.py --bootstrap B
    --input-topic I --expected-records N --out-dir RUN_DIR --subjects '[{"name": "", "output": O, "assertions": A}]'

Writes ``verdict.json`` and Data Docs (``data_docs/index.html``) into ``--out-dir`` and exits 0 when the
verdict is ``passed``, 2 when ``failed``, 3 when ``inconclusive``. With several subjects (a Kafka Streams version
matrix) each version is judged on its own (``subjects/<version>/verdict.json`` and Data Docs) and ``verdict.json``
holds the table: version x status x anomaly counts, and the worst status as the run's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anomalies
import contracts
import kafka_topics
import rundir
import timeline
import verdict as verdicts
from pyspark.sql import DataFrame, Row, SparkSession

log = logging.getLogger("kafka_soak.validate")

SUITES_DIR = Path(__file__).resolve().parent.parent / "expectations"
SUMMARY = {"result_format": "SUMMARY", "partial_unexpected_count": verdicts.SAMPLES}


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Logs how long a step of the job took (``phase <name>: <s> s``): where a large run's time goes."""
    started = time.monotonic()
    yield
    log.info("phase %s: %.2f s", name, time.monotonic() - started)


def load_suite(path: Path, anomalies: tuple[str, ...] = contracts.ANOMALIES):
    """A suite kept as GX's own JSON, with the expectations that decide one of ``anomalies`` (those of the app's data
    contract) or the run's conclusiveness; each is built strictly so a typo fails loudly."""
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    data = json.loads(path.read_text())
    expectations = [ExpectationConfiguration(type=e["type"], kwargs=e["kwargs"], meta=e.get("meta")).to_domain_obj()
                    for e in data["expectations"] if (e.get("meta") or {}).get("anomaly") in (None, *anomalies)]
    return ExpectationSuite(name=data["name"], expectations=expectations, meta=data.get("meta"))


def run_suites(frames: dict[str, DataFrame], suites_dir: Path, docs_dir: Path, parameters: dict[str, Any],
               anomalies: tuple[str, ...] = contracts.ANOMALIES) -> list[dict[str, Any]]:
    """Validate each frame with its suite (the expectations of ``anomalies``); render Data Docs; return one flat dict
    per expectation."""
    with phase("gx_setup"):  # importing GX alone takes seconds
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        context.update_data_docs_site("local_site", {
            "class_name": "SiteBuilder", "show_how_to_buttons": False,
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"}})
        source = context.data_sources.add_spark(name="soak")
    flat = []
    with phase("suites"):
        for name, frame in frames.items():
            suite = context.suites.add(load_suite(suites_dir / f"{name}.json", anomalies))
            batch = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe(name)
            definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
            started = time.monotonic()
            given = {"batch_parameters": {"dataframe": frame}, "expectation_parameters": parameters}
            result = definition.run(**given, result_format=SUMMARY)
            columns = sample_columns(result)
            if columns:  # again with GX's unexpected rows, under the same run id: the store keeps this result alone
                result = definition.run(**given, result_format={**SUMMARY, "unexpected_index_column_names": columns},
                                        run_id=result.meta["run_id"])
            log.info("suite %s: %s in %.1f s", name, "passed" if result.success else "FAILED", time.monotonic() - started)
            for r in result.results:
                cfg = r.expectation_config
                flat.append({"suite": name, "type": cfg.type, "success": bool(r.success), "meta": cfg.meta or {},
                             "kwargs": {k: v for k, v in cfg.kwargs.items() if k != "batch_id"},
                             "result": r.result, "samples": samples(frame, cfg, r)})
    with phase("data_docs"):
        context.build_data_docs(site_names=["local_site"])
    return flat


def sample_columns(result: Any) -> list[str]:
    """The columns to show of the rows behind the failed column expectations of a suite's ``result`` (their
    ``meta.sample_columns``); none for a suite that passed. Asking GX for them (``unexpected_index_column_names``)
    costs a query per column expectation, so a suite is validated with them only once it has failed: the samples are
    GX's own unexpected rows, not a second copy of each expectation's predicate, and a run that passed pays nothing."""
    failed = [r.expectation_config for r in result.results if not r.success]
    return list(dict.fromkeys(c for cfg in failed if "column" in cfg.kwargs
                              for c in (cfg.meta or {}).get("sample_columns", [])))


def samples(frame: DataFrame, cfg: Any, result: Any, limit: int = verdicts.SAMPLES) -> list[dict[str, Any]]:
    """Example rows behind a failed expectation, with the columns its meta names: GX's unexpected rows for a column
    expectation; for a table's row count (assertions, incidents: a table that should be empty or small), its rows."""
    columns = (cfg.meta or {}).get("sample_columns")
    if result.success or not columns:
        return []
    if "column" in cfg.kwargs:
        return [{c: plain(row[c]) for c in columns} for row in result.result.get("partial_unexpected_index_list", [])]
    return [row.asDict(recursive=True) for row in frame.select(*columns).limit(limit).collect()]


def plain(value: Any) -> Any:
    """A value of a Spark row as JSON has it: a struct as an object, also inside an array."""
    if isinstance(value, Row):
        return value.asDict(recursive=True)
    return [plain(v) for v in value] if isinstance(value, list) else value


def write_timeline(judged: dict[str, tuple[dict[str, DataFrame], dict[str, DataFrame]]], found: dict[str, set[str]],
                   out_dir: Path) -> None:
    """``timeline.json`` for the soak report (a matrix: every version's output and anomalies on one axis). Written
    after the verdict: a report's data must never cost a run its verdict, so a failure here is recorded in the
    file and logged, not raised."""
    started = time.monotonic()
    try:
        data = timeline.merge({name: timeline.build(history, frames, found[name])
                               for name, (history, frames) in judged.items()})
    except Exception as exc:  # the verdict is already on disk: say what the report lacks, keep the exit code
        log.warning("timeline for the report could not be computed: %s", exc)
        data = {"error": f"{type(exc).__name__}: {exc}"}
    rundir.write_json(out_dir / rundir.TIMELINE, data, indent=None)
    log.info("timeline for the report in %.1f s", time.monotonic() - started)


def read_health(run_dir: Path) -> dict[str, Any]:
    """How the instances fared (``health.json``, written when they were stopped); none when the run has no record
    of it (a checker run by hand on topics alone)."""
    return rundir.read_json(run_dir / rundir.HEALTH) or {"incidents": [], "allowance": 0}


def read_quota_usage(run_dir: Path) -> list[dict[str, Any]]:
    """What each quota did, as measured on the brokers when the app stopped (``quotas.json``; none: no quota or
    not measurable on this backend)."""
    return rundir.read_json(run_dir / rundir.QUOTAS) or []


def label(subject: dict[str, Any]) -> str:
    """How the report and the alert name a subject: by its workflow design or its Kafka Streams version. A subject
    given by hand (``--subjects``, as the docstring above shows) may have neither."""
    if subject.get("design"):
        return f"design {subject['design']}"
    return f"Kafka Streams {subject['version']}" if subject.get("version") else "the app"


def judge(spark: SparkSession, args: argparse.Namespace, subject: dict[str, Any], inputs: DataFrame,
          truncated: dict[str, dict[int, int]], health: dict[str, Any], out_dir: Path) -> tuple[dict[str, Any], Any]:
    """One subject's verdict (the app of the run, or one version of a matrix): its output and assertions against
    the run's input; writes its Data Docs under ``out_dir``. Returns the verdict and what the report's timeline
    needs."""
    contract = contracts.of(subject.get("design", ""))
    topics = {"output": subject["output"], "assertions": subject["assertions"],
              **({"executions": subject["executions"]} if contract == contracts.WORKFLOW else {})}
    schemas = {"output": anomalies.OUTPUT_SCHEMA, "assertions": anomalies.ASSERTION_SCHEMA,
               "executions": anomalies.EXECUTION_SCHEMA}
    with phase("read"):
        for role in ("output", "executions"):  # the history a verdict stands on; assertions only add to it
            lows = kafka_topics.low_watermarks(args.bootstrap, topics[role]) if role in topics else {}
            truncated = {**truncated, **({topics[role]: lows} if lows else {})}
        history = {"input": inputs, **{role: anomalies.parse(kafka_topics.read(spark, args.bootstrap, topic),
                                                             schemas[role]).cache() for role, topic in topics.items()}}
        counts = {role: df.count() for role, df in history.items()}
    log.info("%sread %s", f"{subject['name']}: " if subject["name"] else "",
             ", ".join(f"{n} {r} records" for r, n in counts.items()))
    with phase("frames"):  # computed and cached once here, so the suites only scan them
        frames = {name: df.cache() for name, df in anomalies.frames(history["input"], history["output"],
                                                                     history["assertions"],
                                                                     history.get("executions")).items()}
        rows = {name: df.count() for name, df in frames.items()}
        mine = [i for i in health["incidents"] if i.get("subject", "") == subject["name"]]
        frames["app_health"] = anomalies.incidents(spark, {"incidents": mine})
    judged = contracts.JUDGED[contract]
    docs_dir = out_dir / rundir.DATA_DOCS
    results = run_suites(frames, args.suites_dir, docs_dir, {"expected_records": args.expected_records,
                                                             "health_allowance": health["allowance"]}, judged)
    outcome = verdicts.decide(results, truncated, judged)
    records = {"input": counts["input"], "output": counts["output"], "assertions": counts["assertions"],
               "expected_input": args.expected_records}
    if contract == contracts.WORKFLOW:
        records.update({"execution_versions": counts["executions"], "executions": rows["executions"]})
    else:
        records.update({"distinct_keys": rows["key_ids"], "distinct_assigned_ids": rows["assigned_ids"]})
    outcome.update({"contract": contract, "label": label(subject), "records": records,
                    "topics": {"input": args.input_topic, **topics},
                    "data_docs": str(docs_dir / "index.html")})
    return outcome, (history, frames)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "input-topic"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--subjects", type=json.loads, required=True,
                        help='the apps under test: [{"name": "" or a version, "output": topic, "assertions": topic}], the '
                        'workflow engine with its "design" and "executions": topic')
    parser.add_argument("--expected-records", type=int, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--backend", default="unknown")
    parser.add_argument("--suites-dir", type=Path, default=SUITES_DIR)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(message)s")
    log.info("driver started at %.3f", time.time())
    started = time.monotonic()
    # Importing GX takes seconds of Python; the driver mostly waits on the JVM until the suites, so import it alongside
    # (``run_suites``' own import then waits for this one under Python's import lock, or raises its error).
    threading.Thread(target=importlib.import_module, args=("great_expectations",), name="gx-import", daemon=True).start()

    with phase("session"):
        spark = SparkSession.builder.appName("kafka-soak-validate").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    with phase("read"):
        lows = kafka_topics.low_watermarks(args.bootstrap, args.input_topic)
        inputs = anomalies.parse(kafka_topics.read(spark, args.bootstrap, args.input_topic),
                                 anomalies.INPUT_SCHEMA).cache()
    truncated = {args.input_topic: lows} if lows else {}
    health = read_health(args.out_dir)
    matrix = len(args.subjects) > 1
    judged = {}
    for subject in args.subjects:
        out_dir = args.out_dir / rundir.SUBJECTS / subject["name"] if matrix else args.out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        judged[subject["name"]] = judge(spark, args, subject, inputs, truncated, health, out_dir)
        if matrix:
            rundir.write_json(out_dir / rundir.VERDICT, judged[subject["name"]][0])
    common = {"backend": {"name": args.backend}, "quotas": read_quota_usage(args.out_dir), "health": health,
              "validated_at": time.time(), "validation_seconds": round(time.monotonic() - started, 1)}
    outcome = {**(verdicts.combine({name: v for name, (v, _) in judged.items()}) if matrix else judged[""][0]), **common}
    rundir.write_json(args.out_dir / rundir.VERDICT, outcome)
    found = {k: v for k, v in outcome["anomalies"].items() if v}
    log.info("verdict: %s; records in=%d out=%d; anomalies %s; reasons %s; data docs %s", outcome["status"].upper(),
             outcome["records"]["input"], outcome["records"]["output"], found or "none",
             outcome["inconclusive_reasons"] or "none", outcome["data_docs"])
    for row in outcome.get("matrix", []):
        log.info("  %s: %s, anomalies %s", row["label"], row["status"].upper(),
                 {k: v for k, v in row["anomalies"].items() if v} or "none")
    write_timeline({name: parts for name, (_, parts) in judged.items()},
                   {name: {k for k, v in verdict["anomalies"].items() if v} for name, (verdict, _) in judged.items()},
                   args.out_dir)
    spark.stop()
    return verdicts.EXIT_CODES[outcome["status"]]


if __name__ == "__main__":
    sys.exit(main())
