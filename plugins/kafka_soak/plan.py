"""The type of a run's plan, which every task and every room is given: a leaf, so that each room reads the plan
without importing ``run_plan``, which resolves it from the params and imports the rooms."""

from __future__ import annotations

from typing import Any, TypedDict


class ParamsError(ValueError):
    """Params that cannot run; the message lists every problem."""


class Plan(TypedDict):
    """A run's plan, as every task is given it (an XCom, and ``params.json``'s ``plan``): each param of
    ``params.PARAMS`` resolved, with the program as tokens (``program_source``: "given" or "random(seed=N)"), the load as
    phases with their id ranges (each: records, first_id, rate, and at_s or after_step), and the app under test's
    profile (``profile.Profile.as_dict()``; the reference app's when the params name none); ``program_s`` is how long
    the program runs (each step holds for ``interval_s``); ``stalls`` the program's stalls (``shared.stalls.Stall``),
    which the instances they stall are started ready for; ``program_needs`` the backend capabilities the program
    needs. tests/unit/airflow_side/test_params.py holds its keys to ``params.PARAMS``."""

    program: list[str]
    interval_s: float
    records: int
    keys: int
    partitions: int
    instances: int
    brokers: int
    kafka_version: str
    kafka_versions: list[str]
    transaction_version: int | None
    broker_config: dict[str, Any]
    app: str
    streams_version: str
    streams_versions: list[str]
    variants: list[dict[str, Any]]
    streams_config: dict[str, Any]
    group_protocol: str
    topology: str
    workflow_designs: list[str]
    parallel_tasks: int
    threads: int
    acceptable_recovery_lag: int
    max_warmup_replicas: int
    commit_interval_ms: int
    state_write_bytes: int
    rocksdb_write_buffer_bytes: int
    standbys: int
    cache_entries: int
    phases: list[dict[str, Any]]
    rate: float
    payload_bytes: int
    bug: str
    bug_every: int
    crash_probability: float
    worker_style: str
    worker_versions: list[str]
    restart: str
    session_timeout_ms: int
    restart_backoff_s: float
    seed: int  # a null param's drawn for the run
    random_program: dict[str, Any]
    health_allowance: int
    sample_interval_s: float
    resource_growth: dict[str, Any]  # whole: what the param left out has its default (params.growth_bounds)
    drain_timeout_s: int
    stall_timeout_s: int
    allow_backlog: bool
    backend: str
    runtime: str
    kafka_conn_id: str
    kafka_image: str
    keep_topics: bool
    quotas: list[dict[str, Any]]
    app_image: str
    app_command: list[str]
    app_profile: dict[str, Any]
    app_env: dict[str, Any]
    docker_url: str
    docker_conn_id: str
    program_source: str
    program_s: float
    stalls: list[dict[str, Any]]
    program_needs: list[str]  # the backend capabilities its program's fault kinds need (FaultKind.needs)
