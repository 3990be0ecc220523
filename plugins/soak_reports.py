"""Airflow plugin of a checkout: the suite's plugin (``kafka_soak.plugin``) from the plugins folder; an installed
package registers it through its provider info instead."""

from kafka_soak.plugin import SoakReportsPlugin

__all__ = ["SoakReportsPlugin"]
