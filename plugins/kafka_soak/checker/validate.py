"""The validation task: ``SparkSubmitOperator`` running spark_jobs/validate_soak.py on the run's topics. It builds the
spark-submit (arguments, conf, jars, the job's modules); what the job judges and how is ``spark_jobs/``'s."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException

from kafka_soak import shared
from kafka_soak.backends import broker_matrix
from kafka_soak.backends.kafka_jars import SHORT_LIVED_JIT
from kafka_soak.checker import matrix, spark_kafka
from kafka_soak.checker.class_data import SharedArchive
from kafka_soak.clients import subjects
from kafka_soak.infra import kafka_io
from kafka_soak.infra.connection import client_settings, settings_in_env
from kafka_soak.shared import contracts, java_client, rundir

if TYPE_CHECKING:
    from kafka_soak.plan import Plan

SPARK_JOBS = rundir.resource("spark_jobs")
JOB = SPARK_JOBS / "validate_soak.py"
# What the job imports, shipped with it (a cluster's driver and executors have no checkout): its own modules, each
# contract's (``contracts.Contract.module``), and the package it shares with the Airflow side (``shipped_modules``).
JOB_MODULES = (SPARK_JOBS / "kafka_topics.py", SPARK_JOBS / "anomalies.py", SPARK_JOBS / "timeline.py",
               SPARK_JOBS / "verdict.py", *(SPARK_JOBS / f"{c.module}.py" for c in contracts.CONTRACTS.values()))
SHARED = Path(shared.__file__).parent
# The job's own settings; a ``spark_default`` connection's master and a deployment's spark-defaults.conf add to them.
# The job reads each topic partition once: Spark's Kafka source would keep each partition's consumer and the records of
# its last poll for minutes to reuse them, which at 10M records (167 partitions a topic) exhausted a 1 GiB driver.
CONF = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.pyspark.python": sys.executable,
        **{f"spark.kafka.consumer.{pool}.{key}": "1s" for pool in ("cache", "fetchedData.cache")
           for key in ("timeout", "evictorThreadRunInterval")}}
ENV = {"PYSPARK_PYTHON": sys.executable}
# A local master's driver and executors are one JVM on this machine: it listens on loopback. A cluster's executors
# must reach the driver, whose address is then the deployment's (SPARK_LOCAL_IP, or spark.driver.host in its
# spark-defaults.conf), not loopback.
LOCAL_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}
# Up to this many records the job ends within a minute, and the driver JVM's C2 compiler spends more CPU than it
# saves: such a run's checker compiles with C1 alone (docs/benchmarks.md: "The checker's JIT"). Past it, Spark's hot
# loops want C2 (at 1M records C1 alone was the slower of one pair; `bench/checker_jit.py --size large` measures it).
SHORT_JOB_RECORDS = 100_000
# The frames' shuffles sort input and output records together by id (two rows per record). At this many records per
# shuffle partition a task's sort fits its share of a default 1 GiB driver's execution memory (by Spark's memory model
# 100-200 MB on local[2], beside the cached frames) instead of spilling. A small run gets one partition per core of
# local[2]: fewer would leave a core idle, more only schedules tasks (6 000 records: 27.5 CPU-s and 20.8 s to the
# verdict with 2, 31.4 CPU-s and 23.7 s with 8, medians of three pairs).
RECORDS_PER_SHUFFLE_PARTITION = 250_000
MIN_SHUFFLE_PARTITIONS = 2
# Spark's adaptive execution merges shuffle partitions that come out small and re-plans each query between its
# stages, running each shuffle's map stage as a Spark job of its own (a 6 000-record history's frames: 31 jobs with
# it, 11 without). Up to this many records the job goes without it: its few partitions come out even, with nothing to
# merge (1M records, 4 partitions: 63.2, 71.9, 73.5 s to the verdict without it, 73.2, 76.0, 77.3 s with it, pairs
# side by side on a loaded machine). A larger run keeps it.
ADAPTIVE_FROM_RECORDS = 1_000_001
# Spark's own redaction of the UI's environment page and event logs (its default), plus the variable we set.
REDACTION = r"(?i)secret|password|token|access[.]?key|" + kafka_io.SETTINGS_ENV


def job_args(cluster: dict[str, Any], out_dir: str, expected_records: int | str,
             growth: dict[str, Any] | None = None) -> list[str]:
    """validate_soak.py's arguments for the run's Kafka (``provision``'s output) and run directory, and the bounds
    the app's growth is judged by (the plan's ``resource_growth``; none: not judged)."""
    return ["--bootstrap", cluster["bootstrap_servers"], "--input-topic", cluster["topics"]["input"],
            "--subjects", json.dumps(subjects.judged(cluster)), "--backend", cluster["backend"],
            "--expected-records", str(expected_records), "--out-dir", str(out_dir),
            *(["--resource-growth", json.dumps(growth)] if growth else [])]


class ValidateOperator(SparkSubmitOperator):
    """The checker on the run's topics: builds its spark-submit from the run's Kafka (``cluster``, ``provision``'s
    output), where the run's evidence goes (``out_dir``) and how many records the generator produced (the ``plan``'s,
    as admission resolved them, else ``expected_records``), and hands it Spark's own Kafka source (``spark_kafka``,
    fetched on first use unless ``jars`` are given).

    The cluster's security settings reach the job at execute time, after template rendering, so they are neither
    rendered fields (stored and shown by Airflow) nor on spark-submit's command line (which anyone on the worker can
    read with ``ps``). The driver reads them from its environment: spark-submit's on a ``local`` or client-mode
    master; on YARN or Kubernetes, where the driver may run in the cluster, from a properties file only this process
    may read, removed once spark-submit returns (the provider's ``env_vars`` would put them on the command line
    there). The executors get them inside the job, from Spark's Kafka source.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "cluster", "plan", "out_dir", "expected_records")

    def __init__(self, *, cluster: Any, out_dir: str, expected_records: int | str | None = None,
                 plan: Plan | None = None, **kwargs: Any) -> None:
        kwargs = {"application": str(JOB), "conf": CONF, "env_vars": ENV, **kwargs}
        super().__init__(**kwargs)
        self.cluster, self.plan, self.out_dir, self.expected_records = cluster, plan, out_dir, expected_records

    def execute(self, context: Any) -> None:
        """The checker on the run's cluster; on a broker version matrix (``plan``'s ``kafka_versions``), on each
        cluster in turn into its own directory, then the matrix's verdict in the run's (``matrix.combine``)."""
        if self.plan:
            self.expected_records = self.plan["records"]
        all_members = broker_matrix.members(Path(self.out_dir), self.plan or {})
        if not all_members[0].name:
            return self.submit(context, self.cluster, self.out_dir)
        failures = {}
        for member in all_members:
            self.log.info("checking the cluster of Apache Kafka %s", member.name)
            try:
                self.submit(context, member.cluster(self.cluster), str(member.dir))
            except AirflowException as exc:  # its verdict failed, or the job did not reach one: the others still count
                failures[member.name] = matrix.submit_failure(str(exc))
        verdict = matrix.combine(Path(self.out_dir), all_members, failures)
        rundir.write_json(Path(self.out_dir) / rundir.VERDICT, verdict)
        for row in verdict["matrix"]:
            self.log.info("  %s: %s, anomalies %s", row["label"], row["status"].upper(),
                          {k: v for k, v in row["anomalies"].items() if v} or "none")
        if verdict["status"] != "passed":
            raise AirflowException(f"the broker version matrix's verdict is {verdict['status']}: "
                                   + ", ".join(f"{row['label']} {row['status']}" for row in verdict["matrix"]))
        return None

    def submit(self, context: Any, cluster: dict[str, Any], out_dir: str) -> None:
        """One spark-submit of the checker on ``cluster``'s topics, its evidence into ``out_dir``."""
        self._hook = None  # the provider keeps its hook, built from these arguments, for the operator's life
        self.application_args = job_args(cluster, out_dir, self.expected_records,
                                         (self.plan or {}).get("resource_growth"))
        master, given = self._get_hook()._connection["master"], self.properties_file
        if master.startswith("local"):
            self.env_vars = {**LOCAL_ENV, **(self.env_vars or {})}
        self.jars = self.jars or ",".join(map(str, spark_kafka.resolve()))
        archive = driver_archive(master, [Path(jar) for jar in self.jars.split(",")])
        self.conf = without_config_providers({**sized_conf(int(self.expected_records), archive), **(self.conf or {})})
        settings = client_settings(cluster)
        try:
            with shipped_modules() as self.py_files:
                if not settings:
                    return super().execute(context)
                with settings_in_env(settings), cluster_properties(settings, master, given) as path:
                    self.properties_file = path or given
                    return super().execute(context)
        finally:
            self.properties_file = given
            if archive is not None:
                archive.keep()


@contextmanager
def shipped_modules() -> Iterator[str]:
    """spark-submit's ``--py-files`` for the job: its own modules, and ``kafka_soak.shared`` as a zip (the one form in
    which Spark puts a package on its driver's and executors' path), made for the submit and removed after it."""
    with tempfile.TemporaryDirectory(prefix="soak-spark-") as work:
        archive = Path(work, "kafka_soak_shared.zip")
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("kafka_soak/__init__.py", "")
            for module in sorted(SHARED.glob("*.py")):
                zipped.write(module, f"kafka_soak/shared/{module.name}")
        yield ",".join(map(str, (*JOB_MODULES, archive)))


def driver_archive(master: str, jars: list[Path]) -> SharedArchive | None:
    """The driver JVM's class-data archive where the driver runs on this machine (a ``local`` master); none where a
    cluster runs it."""
    if not master.startswith("local"):
        return None
    [pyspark] = importlib.util.find_spec("pyspark").submodule_search_locations  # not imported: the DAGs' parse
    return SharedArchive.of(f"spark-{spark_kafka.spark_version()}-driver", [Path(pyspark, "jars"), *jars])


def sized_conf(expected_records: int, archive: SharedArchive | None) -> dict[str, str]:
    """What depends on the run's size: the shuffle partitions (and adaptive execution, off below
    ``ADAPTIVE_FROM_RECORDS``), and the driver JVM's options (C1 alone for a run of up to ``SHORT_JOB_RECORDS``, and its
    class-data ``archive``). Conf given to the operator takes precedence."""
    options = [*([SHORT_LIVED_JIT] if expected_records <= SHORT_JOB_RECORDS else []),
               *([option] if archive and (option := archive.java_option()) else [])]
    partitions = shuffle_partitions(expected_records)
    return {"spark.sql.shuffle.partitions": str(partitions),
            **({"spark.sql.adaptive.enabled": "false"} if expected_records < ADAPTIVE_FROM_RECORDS else {}),
            **({"spark.driver.extraJavaOptions": " ".join(options)} if options else {})}


def without_config_providers(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with Kafka's config providers off in the driver's and the executors' JVMs (their Kafka consumers read
    the run's topics), after whatever options it gives them."""
    return {**conf, **{key: f"{conf.get(key, '')} {java_client.NO_CONFIG_PROVIDERS}".lstrip()
                       for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")}}


def shuffle_partitions(expected_records: int) -> int:
    """Shuffle partitions for a run of this size: one per ``RECORDS_PER_SHUFFLE_PARTITION``, at least
    ``MIN_SHUFFLE_PARTITIONS``."""
    return max(MIN_SHUFFLE_PARTITIONS, -(-expected_records // RECORDS_PER_SHUFFLE_PARTITION))


@contextmanager
def cluster_properties(settings: dict[str, Any], master: str, given: str | None) -> Iterator[str | None]:
    """A Spark properties file that gives the Kafka ``settings`` to a driver YARN or Kubernetes may run in the
    cluster; None on any other master, whose driver runs here and inherits them. It holds what spark-submit would
    have read otherwise (``given``, or the installation's ``spark-defaults.conf``), since ``--properties-file``
    replaces that, then the settings. Readable by this user only, and removed on exit."""
    if "yarn" in master:
        driver_env = "spark.yarn.appMasterEnv"
    elif master.startswith("k8s"):
        driver_env = "spark.kubernetes.driverEnv"
    else:
        yield None
        return
    value = kafka_io.settings_env(settings)[kafka_io.SETTINGS_ENV]
    lines = [f"{driver_env}.{kafka_io.SETTINGS_ENV}={java_client.escape(value)}"]
    base = Path(given) if given else spark_defaults()
    inherited = base.read_text() if base and base.is_file() else ""
    if "spark.redaction.regex" not in inherited:
        lines.append(f"spark.redaction.regex={java_client.escape(REDACTION)}")
    fd, path = tempfile.mkstemp(prefix="soak-spark-", suffix=".properties")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(inherited.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
        yield path
    finally:
        os.unlink(path)


def spark_defaults() -> Path | None:
    """The ``spark-defaults.conf`` spark-submit reads when it is given no properties file."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (os.environ.get("SPARK_HOME") and f"{os.environ['SPARK_HOME']}/conf")
    return Path(conf_dir, "spark-defaults.conf") if conf_dir else None
