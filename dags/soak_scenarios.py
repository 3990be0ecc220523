"""Registers one Airflow soak DAG per scenario file in ``scenarios/`` (built by kafka_soak.factory)."""

from pathlib import Path

from kafka_soak.factory import build_all

globals().update(build_all(Path(__file__).parent / "scenarios"))
