"""The validation task: ``SparkSubmitOperator`` running spark_jobs/validate_soak.py on the run's topics."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from kafka_soak import kafka_io
from kafka_soak.backends.external import client_settings, settings_in_env

# Spark's own redaction of the UI's environment page and event logs (its default), plus the variable we set.
REDACTION = r"(?i)secret|password|token|access[.]?key|" + kafka_io.SETTINGS_ENV


class ValidateOperator(SparkSubmitOperator):
    """Hands the cluster's security settings to the Spark job at execute time, after template rendering, so they
    are neither rendered fields (stored and shown by Airflow) nor on spark-submit's command line (which anyone on
    the worker can read with ``ps``).

    On a ``local`` master the driver and its Python workers inherit them from spark-submit's environment. On any
    other master the executors (and, on YARN or Kubernetes, a driver that runs in the cluster) get them from a
    properties file only this process may read, removed once spark-submit returns. The provider's ``env_vars``
    would put them on the command line there (``--conf spark.yarn.appMasterEnv.X=...``).

    :param cluster: the run's Kafka (``provision``'s output)
    """

    template_fields = (*SparkSubmitOperator.template_fields, "cluster")

    def __init__(self, *, cluster: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster

    def execute(self, context: Any) -> None:
        settings = client_settings(self.cluster)
        if not settings:
            return super().execute(context)
        master, given = self._get_hook()._connection["master"], self.properties_file
        with settings_in_env(settings), cluster_properties(settings, master, given) as path:
            self.properties_file = path or given
            try:
                return super().execute(context)
            finally:
                self.properties_file = given


@contextmanager
def cluster_properties(settings: dict[str, Any], master: str, given: str | None) -> Iterator[str | None]:
    """A Spark properties file that gives the Kafka ``settings`` to the executors (and to a YARN or Kubernetes
    driver) of a job on ``master``; None on a ``local`` master, which needs none. It holds what spark-submit would
    have read otherwise (``given``, or the installation's ``spark-defaults.conf``), since ``--properties-file``
    replaces that, then the settings. Readable by this user only, and removed on exit."""
    if master.startswith("local"):
        yield None
        return
    value = kafka_io.settings_env(settings)[kafka_io.SETTINGS_ENV]
    lines = [f"spark.executorEnv.{kafka_io.SETTINGS_ENV}={escape(value)}"]
    if "yarn" in master:
        lines.append(f"spark.yarn.appMasterEnv.{kafka_io.SETTINGS_ENV}={escape(value)}")
    elif master.startswith("k8s"):
        lines.append(f"spark.kubernetes.driverEnv.{kafka_io.SETTINGS_ENV}={escape(value)}")
    base = Path(given) if given else spark_defaults()
    inherited = base.read_text() if base and base.is_file() else ""
    if "spark.redaction.regex" not in inherited:
        lines.append(f"spark.redaction.regex={escape(REDACTION)}")
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


def escape(value: str) -> str:
    """A value as a Java properties file reads it back: backslashes doubled, leading blanks and line breaks kept."""
    value = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + value if value[:1] in (" ", "\t") else value
