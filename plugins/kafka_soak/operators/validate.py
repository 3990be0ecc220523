"""The validation task: ``SparkSubmitOperator`` running spark_jobs/validate_soak.py on the run's topics."""

from __future__ import annotations

from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from kafka_soak import kafka_io
from kafka_soak.backends.external import client_settings


class ValidateOperator(SparkSubmitOperator):
    """Adds the cluster's security settings to the Spark job's environment at execute time, after template
    rendering, so they are neither rendered fields (stored and shown by Airflow) nor on the command line.

    :param cluster: the run's Kafka (``provision``'s output)
    """

    template_fields = (*SparkSubmitOperator.template_fields, "cluster")

    def __init__(self, *, cluster: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster

    def execute(self, context: Any) -> None:
        self.env_vars = {**(self.env_vars or {}), **kafka_io.settings_env(client_settings(self.cluster))}
        super().execute(context)
