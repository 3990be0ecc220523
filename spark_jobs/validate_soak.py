"""The soak's checker: read the run's topics with Spark, judge them with Great Expectations, write the verdict.

spark-submit --jars <Spark's Kafka source> --py-files <its modules> spark_jobs/validate_soak.py --bootstrap B
    --input-topic I --expected-records N --out-dir RUN_DIR --subjects '[{"name": "", "output": O, "assertions": A}]'

Writes ``verdict.json`` and Data Docs (``data_docs/index.html``) into ``--out-dir`` and exits 0 when the
verdict is ``passed``, 2 when ``failed``, 3 when ``inconclusive``. With several subjects (a Kafka Streams version
matrix, or the judged outputs of a team's app, each by the contract its profile declares) each is judged on its own
(``subjects/<name>/verdict.json`` and Data Docs) and ``verdict.json`` holds the table: subject x status x anomaly
counts, and the worst status as the run's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anomalies
import kafka_topics
import timeline
import verdict as verdicts
from pyspark import SparkContext
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from kafka_soak.shared import contracts, resources, rundir
from kafka_soak.shared.verdicts import EXIT_CODES, SAMPLES, combine

log = logging.getLogger("kafka_soak.validate")

SUITES_DIR = Path(__file__).resolve().parent.parent / "expectations"
SUMMARY = {"result_format": "SUMMARY", "partial_unexpected_count": SAMPLES}
# A suite is first validated for its outcome alone: a column expectation that passes then costs GX two queries instead
# of three (its unexpected values are a query of their own, empty when it passed), and only a suite that failed is
# validated again for its counts and samples (``SUMMARY``), the result its Data Docs show.
JUDGED = {"result_format": "BOOLEAN_ONLY"}


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Logs how long a step of the job took and how many Spark jobs it ran (``phase <name>: <s> s, <n> Spark jobs``):
    where a large run's time goes, and a small run's, whose every job costs its scheduling more than its data."""
    started, jobs = time.monotonic(), spark_jobs()
    yield
    log.info("phase %s: %.2f s, %d Spark jobs", name, time.monotonic() - started, spark_jobs() - jobs)


def spark_jobs() -> int:
    """The Spark jobs this driver has run so far (none before its session; Spark keeps the last 1 000)."""
    context = SparkContext._active_spark_context
    return len(context.statusTracker().getJobIdsForGroup()) if context is not None else 0


@contextmanager
def adaptive_execution(enabled: bool) -> Iterator[None]:
    """Spark's adaptive query execution on or off for a step. Counting the topics read and the suites' queries are
    aggregates over cached frames, which adaptive execution cannot improve but runs as two Spark jobs each (the
    shuffle's map stage as a job of its own): GX's queries doubled in jobs to schedule. The frames' shuffles keep it,
    in a run large enough for it to merge their partitions (``checker.validate.sized_conf`` turns it off in a smaller
    run's job)."""
    conf = SparkSession.getActiveSession().conf
    before = conf.get("spark.sql.adaptive.enabled")
    conf.set("spark.sql.adaptive.enabled", str(enabled).lower())
    try:
        yield
    finally:
        conf.set("spark.sql.adaptive.enabled", before)


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
        source = context.data_sources.add_spark(name="soak", persist=False)  # ``judge`` cached the large frames
    flat = []
    with phase("suites"), adaptive_execution(False):
        for name, frame in frames.items():
            suite = context.suites.add(load_suite(suites_dir / f"{name}.json", anomalies))
            batch = source.add_dataframe_asset(name=name).add_batch_definition_whole_dataframe(name)
            definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
            started, jobs = time.monotonic(), spark_jobs()
            given = {"batch_parameters": {"dataframe": frame}, "expectation_parameters": parameters}
            result = definition.run(**given, result_format=JUDGED)
            if not result.success:  # again with the counts and GX's unexpected rows, under the same run id: the
                columns = sample_columns(result)  # store keeps this result alone
                result = definition.run(**given, run_id=result.meta["run_id"], result_format={
                    **SUMMARY, **({"unexpected_index_column_names": columns} if columns else {})})
            log.info("suite %s: %s in %.1f s, %d Spark jobs", name, "passed" if result.success else "FAILED",
                     time.monotonic() - started, spark_jobs() - jobs)
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
    failed = [r.expectation_config for r in result.results if not r.success and not counts_observed(r.expectation_config)]
    return list(dict.fromkeys(c for cfg in failed if "column" in cfg.kwargs
                              for c in (cfg.meta or {}).get("sample_columns", [])))


def counts_observed(cfg: Any) -> bool:
    """An aggregate expectation whose observed value is the count (``verdict.expectation_count``): it has no
    unexpected rows of its own."""
    return (cfg.meta or {}).get("count") == "observed_value"


def samples(frame: DataFrame, cfg: Any, result: Any, limit: int = SAMPLES) -> list[dict[str, Any]]:
    """Example rows behind a failed expectation, with the columns its meta names: GX's unexpected rows for a column
    expectation; for a table's row count (assertions, incidents: a table that should be empty or small), its rows;
    for an aggregate that counts, the rows that add to it."""
    columns = (cfg.meta or {}).get("sample_columns")
    if result.success or not columns:
        return []
    if counts_observed(cfg):
        return [row.asDict(recursive=True) for row in
                frame.where(F.col(cfg.kwargs["column"]) != 0).select(*columns).limit(limit).collect()]
    if "column" in cfg.kwargs:
        return [{c: plain(row[c]) for c in columns} for row in result.result.get("partial_unexpected_index_list", [])]
    return [row.asDict(recursive=True) for row in frame.select(*columns).limit(limit).collect()]


def plain(value: Any) -> Any:
    """A value of a Spark row as JSON has it: a struct as an object, also inside an array."""
    if isinstance(value, Row):
        return value.asDict(recursive=True)
    return [plain(v) for v in value] if isinstance(value, list) else value


def write_timeline(judged: dict[str, tuple[dict[str, DataFrame], dict[str, DataFrame]]], found: dict[str, set[str]],
                   out_dir: Path, inputs: DataFrame) -> None:
    """``timeline.json`` for the soak report (a matrix: every version's output and anomalies on one axis, under the
    whole ``inputs``' production, unprocessed records included). Written
    after the verdict: a report's data must never cost a run its verdict, so a failure here is recorded in the
    file and logged, not raised."""
    started = time.monotonic()
    try:
        data = timeline.merge({name: timeline.build(history, frames, found[name], inputs)
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


def read_drain(run_dir: Path) -> dict[str, Any]:
    """How the drain ended (``drain.json``): the partitions it saw stall and the backlogs it allows; nothing stalled
    and no backlog allowed when the run has no record of it."""
    return rundir.read_json(run_dir / rundir.DRAIN) or {}


def read_quota_usage(run_dir: Path) -> list[dict[str, Any]]:
    """What each quota did, as measured on the brokers when the app stopped (``quotas.json``; none: no quota or
    not measurable on this backend)."""
    return rundir.read_json(run_dir / rundir.QUOTAS) or []


def backlog_allowed(drain: dict[str, Any], subject: dict[str, Any]) -> bool:
    """Whether the input a subject's group left uncommitted is a backlog the run tolerates: the scenario allows one and
    the drain saw the group working it off (``drain.json``'s ``backlogs``)."""
    return any(b["group"] == subject.get("app_id") and b.get("allowed") for b in drain.get("backlogs", []))


def contract_of(subject: dict[str, Any]) -> str:
    """A subject's data contract: the one a team's app declared for the output (``contract``), else its reference
    app's."""
    return contracts.for_output(subject.get("design", ""), subject.get("contract", ""))


def contract(subject: dict[str, Any]) -> contracts.Contract:
    """The record of a subject's data contract (``contract_of``): what it reads, judges and counts."""
    return contracts.CONTRACTS[contract_of(subject)]


# Each contract's Spark module (``Contract.module``, shipped with the job): how it reads an output's topics
# (``read``) and the frames it judges them by (``subject_frames``).
MODULES = {name: importlib.import_module(c.module) for name, c in contracts.CONTRACTS.items()}


def label(subject: dict[str, Any]) -> str:
    """How the report and the alert name a subject: as the suite names its own apps' (``label``: "Kafka Streams
    3.8.1 (txn-60s)", "design single-writer"), else a team's app's output by its name and contract. A subject given by
    hand (``--subjects``, as the docstring above shows) may have neither: "the app"."""
    if subject.get("label"):
        return subject["label"]
    if not subject.get("name"):
        return "the app"
    return f"{subject['name']} ({contract(subject).title(subject)})"  # <topic>@<version> in a matrix of the app's versions


def health_owner(subject: dict[str, Any], subjects: list[dict[str, Any]]) -> str | None:
    """Whose instances' incidents (``health.json`` names the subject each instance ran as) a subject's verdict counts,
    so that the run's verdict counts each incident, stall and unprocessed record once (``contracts.PER_APP``): a
    reference app's subject, its own; a team's app runs one set of instances (``instances``: "", or its version in a
    matrix) behind all its outputs, judged with the first output of that set; None: the subject judges none of it."""
    if "instances" not in subject:
        return subject["name"]
    owner = subject["instances"]
    first = next(s for s in subjects if s.get("instances") == owner)
    return owner if subject is first else None


def read_input(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    """The run's input as the subjects' contracts read it: a team's app's own format with the soak's headers (and its
    values when an aggregate is judged), the suite's own records (a reference app's, or a team's app written for the
    suite's contract) from their JSON. A run's input is one or the other."""
    reads = {contract(s).reads for s in args.subjects}
    if len(reads) > 1:
        raise ValueError("--subjects: a run's input is an app's own format or the suite's own records, not both")
    if contracts.APP_FORMAT not in reads:
        return anomalies.parse(kafka_topics.read(spark, args.bootstrap, args.input_topic), anomalies.INPUT_SCHEMA)
    values = any(contract(s).input_values for s in args.subjects)
    return anomalies.parse_input(kafka_topics.read(spark, args.bootstrap, args.input_topic, raw=True), values)


def read_topic(spark: SparkSession, bootstrap: str, subject: dict[str, Any], role: str, topic: str) -> DataFrame:
    """One of a subject's topics as its contract's frames take it: a team's app's in its own format (read raw, with
    its headers), the suite's own records' from their JSON."""
    judging = contract(subject)
    raw = kafka_topics.read(spark, bootstrap, topic, raw=judging.reads == contracts.APP_FORMAT)
    return MODULES[judging.name].read(raw, subject, role)


def subject_topics(subject: dict[str, Any]) -> dict[str, str]:
    """A subject's topics by role, those its contract reads (``Contract.topics``): its output; a reference app's
    assertions (its self-check); the workflow engine's executions."""
    return {role: subject[role] for role in contract(subject).topics}


def read_history(spark: SparkSession, bootstrap: str, subject: dict[str, Any],
                 inputs: DataFrame) -> tuple[dict[str, DataFrame], dict[str, dict[int, int]]]:
    """A subject's history (the run's ``inputs`` and its topics by role, cached as read) and those of its topics a
    verdict stands on whose oldest records are gone (assertions only add to it)."""
    topics = subject_topics(subject)
    lows = {topics[role]: kafka_topics.low_watermarks(bootstrap, topics[role])
            for role in ("output", "executions") if role in topics}
    history = {"input": inputs, **{role: read_topic(spark, bootstrap, subject, role, topic).cache()
                                   for role, topic in topics.items()}}
    return history, {topic: parts for topic, parts in lows.items() if parts}


def read_growth(run_dir: Path, bounds: dict[str, Any] | None, health: dict[str, Any]) -> list[dict[str, Any]]:
    """How the run's processes grew (``resources.growth`` on the samples the run kept, each life from when it got to
    work, as its ``health`` says, until the suite asked it to stop); none when the run has no samples or the job was
    given no bounds (a checker run by hand on topics alone)."""
    if not bounds:
        return []
    return resources.growth(rundir.read_jsonl(run_dir / resources.DIR / resources.SAMPLES), bounds,
                            resources.ends(rundir.read_jsonl(run_dir / rundir.EVENTS)), health.get("ready"))


def growth_of(rows: list[dict[str, Any]], owner: str | None, first: bool) -> list[dict[str, Any]]:
    """The growth rows a subject's verdict counts: its ``owner``'s instances (``instance-N``, ``instance-N@<name>`` in a
    matrix), and the brokers' with the ``first`` owner's, so that each counts once."""
    if owner is None:
        return []
    return [r for r in rows if (r["process"].partition("@")[2] == owner if r["process"].startswith(resources.APP_PREFIX)
                                else first)]


def judge(spark: SparkSession, args: argparse.Namespace, subject: dict[str, Any], history: dict[str, DataFrame],
          truncated: dict[str, dict[int, int]], health: dict[str, Any], owner: str | None,
          out_dir: Path, positions: dict[int, tuple[int, int]], drain: dict[str, Any],
          growth: Sequence[dict[str, Any]] = ()) -> tuple[dict[str, Any], Any]:
    """One subject's verdict (the app of the run, one version of a matrix, or one output of a team's app) from its
    ``history`` alone (``read_history``: the input its group committed, ``positions``), with the incidents of
    ``owner``'s instances (``health_owner``), how they grew (``growth``: ``growth_of``'s rows) and its group's progress
    (the ``drain``'s stalls, the input past ``positions``); writes its Data Docs under ``out_dir``. Returns the verdict
    and what the report's timeline needs."""
    judging = contract(subject)
    with phase("read"), adaptive_execution(False):  # Spark reads the topics as it counts them into its cache
        counts = {role: df.count() for role, df in history.items()}
    log.info("%sread %s", f"{subject['name']}: " if subject["name"] else "",
             ", ".join(f"{n} {r} records" for r, n in counts.items()))
    with phase("frames"):  # computed once here into the caches its contract's module keeps: the suites only scan them
        frames = MODULES[judging.name].subject_frames(subject, history)
        rows = {name: df.count() for name, df in frames.items()}
        if owner is not None:
            mine = [i for i in health["incidents"] if i.get("subject", "") == owner]
            frames["app_health"] = anomalies.incidents(spark, {"incidents": mine})
            frames["resources"] = anomalies.growth(spark, list(growth))
            if positions:  # a subject given by hand names no group: its progress is unknown
                stalls = [s for s in drain.get("stalled", []) if s["group"] == subject.get("app_id")]
                frames["progress"] = anomalies.progress(spark, positions, stalls)
    judged = tuple(name for name in judging.judged if owner is not None or name not in contracts.PER_APP)
    docs_dir = out_dir / rundir.DATA_DOCS
    unprocessed = anomalies.unprocessed(positions)
    # the input topic holds every record: those the app committed, which are judged, and the rest
    results = run_suites(frames, args.suites_dir, docs_dir, {"expected_records": args.expected_records - unprocessed,
                                                             "health_allowance": health["allowance"]}, judged)
    outcome = verdicts.decide(results, truncated, judged, ("unprocessed",) if backlog_allowed(drain, subject) else ())
    records = {role: counts[role] for role in ("input", "output", "assertions") if role in counts}
    # the input topic's records: those judged (the app committed them) and the unprocessed rest
    records.update(input=counts["input"] + unprocessed, expected_input=args.expected_records, unprocessed=unprocessed)
    records.update({name: counts[role] for name, role in judging.topic_counts.items()})
    records.update({name: rows[frame] for name, frame in judging.frame_counts.items()})
    outcome.update({"contract": judging.name, "label": label(subject), "records": records,
                    "topics": {"input": args.input_topic, **subject_topics(subject)},
                    "data_docs": str(docs_dir / "index.html")})
    return outcome, (history, frames)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("bootstrap", "input-topic"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--subjects", type=json.loads, required=True,
                        help='the apps under test: [{"name": "" or a version, "output": topic, "assertions": topic}], the '
                        'workflow engine with its "design" and "executions": topic, or each judged output of a team\'s '
                        'app with its "contract" (one-to-one: "id_from"; aggregate: "function", "field", "input_value", '
                        '"value")')
    parser.add_argument("--expected-records", type=int, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--backend", default="unknown")
    parser.add_argument("--suites-dir", type=Path, default=SUITES_DIR)
    parser.add_argument("--resource-growth", type=json.loads, default=None,
                        help="param resource_growth's bounds, whole: judge how the app's instances grew "
                        "(resources/samples.jsonl of --out-dir); none: not judged")
    args = parser.parse_args(argv)
    # The job's own progress at INFO; the libraries' (GX logs some 200 lines of its registry at INFO) from WARNING on.
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(asctime)s %(levelname)s %(message)s")
    log.setLevel(logging.INFO)
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
        inputs = read_input(spark, args).cache()
    truncated = {args.input_topic: lows} if lows else {}
    health, drain = read_health(args.out_dir), read_drain(args.out_dir)
    growth = read_growth(args.out_dir, args.resource_growth, health)
    owners = [health_owner(subject, args.subjects) for subject in args.subjects]
    first_owner = next((o for o in owners if o is not None), None)  # whose verdict counts the brokers' growth
    matrix = len(args.subjects) > 1
    judged = {}
    positions: dict[str, dict[int, tuple[int, int]]] = {}  # per group: what the app committed of the input
    for subject, owner in zip(args.subjects, owners, strict=True):
        out_dir = args.out_dir / rundir.SUBJECTS / subject["name"] if matrix else args.out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        group = subject.get("app_id", "")  # none: a subject given by hand, judged on the whole input
        with phase("read"):
            if group not in positions:
                positions[group] = kafka_topics.committed(args.bootstrap, group, args.input_topic) if group else {}
            history, gone = read_history(spark, args.bootstrap, subject,
                                         anomalies.processed(inputs, positions[group]))
        judged[subject["name"]] = judge(spark, args, subject, history, {**truncated, **gone}, health, owner, out_dir,
                                        positions[group], drain, growth_of(growth, owner, owner == first_owner))
        if matrix:
            rundir.write_json(out_dir / rundir.VERDICT, judged[subject["name"]][0])
    common = {"backend": {"name": args.backend}, "quotas": read_quota_usage(args.out_dir), "health": health,
              "growth": [{k: r[k] for k in resources.GROWTH_FIELDS} for r in growth],
              "validated_at": time.time(), "validation_seconds": round(time.monotonic() - started, 1)}
    outcomes = {name: v for name, (v, _) in judged.items()}
    outcome = {**(combine(outcomes) if matrix else next(iter(outcomes.values()))), **common}
    rundir.write_json(args.out_dir / rundir.VERDICT, outcome)
    found = {k: v for k, v in outcome["anomalies"].items() if v}
    log.info("verdict: %s; records in=%d out=%d; anomalies %s; reasons %s; data docs %s", outcome["status"].upper(),
             outcome["records"]["input"], outcome["records"]["output"], found or "none",
             outcome["inconclusive_reasons"] or "none", outcome["data_docs"])
    for row in outcome.get("matrix", []):
        log.info("  %s: %s, anomalies %s", row["label"], row["status"].upper(),
                 {k: v for k, v in row["anomalies"].items() if v} or "none")
    write_timeline({name: parts for name, (_, parts) in judged.items()},
                   {name: {k for k, n in v["anomalies"].items() if n} for name, v in outcomes.items()}, args.out_dir,
                   inputs)
    spark.stop()
    return EXIT_CODES[outcome["status"]]


if __name__ == "__main__":
    sys.exit(main())
