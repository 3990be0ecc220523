"""A soak run's parameters: JSON schema for Airflow's trigger form and CLI, plus the checks schema can't say.

``PARAM_SCHEMAS`` is what the trigger form and ``airflow dags test -c`` enforce. ``check`` adds the
checks that span several params (an instance number above ``instances``, a run that would not fit in the
embedded broker's partitions) and resolves the program, so a bad run is refused before anything is
provisioned, with a message that names the param and what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kafka_soak import program as programs
from kafka_soak.app.worker import BUGS

PARAM_SCHEMAS: dict[str, dict[str, Any]] = {
    "program": {"type": ["string", "array"], "items": {"type": "integer", "minimum": 0},
                "description": "Instance numbers to toggle, one per step (\"1 2 1\" = start 1, start 2, stop 1; "
                               "0 = no-op). Empty: a random program from `seed`."},
    "interval_s": {"type": "number", "minimum": 1, "maximum": 3600,
                   "description": "Seconds between two program steps."},
    "records": {"type": "integer", "minimum": 1, "maximum": 100_000_000,
                "description": "Input records the generator produces while the program runs."},
    "keys": {"type": "integer", "minimum": 1, "description": "Distinct entity keys the records cycle over."},
    "partitions": {"type": "integer", "minimum": 1, "maximum": 256,
                   "description": "Partitions of the input, output and changelog topics."},
    "instances": {"type": "integer", "minimum": 1, "maximum": 32,
                  "description": "How many app instances the program may toggle."},
    "rate": {"type": "number", "minimum": 0,
             "description": "Records/s produced; 0 spreads the records evenly over the program."},
    "payload_bytes": {"type": "integer", "minimum": 0, "maximum": 1_000_000,
                      "description": "Size of each record's payload field."},
    "bug": {"type": "string", "enum": list(BUGS),
            "description": "A bug switch of the reference app, to prove the checker catches it."},
    "bug_every": {"type": "integer", "minimum": 1,
                  "description": "The switches drop/duplicate act on every input id divisible by this."},
    "seed": {"type": "integer", "minimum": 0, "description": "Seed of the random program and the payloads."},
    "drain_timeout_s": {"type": "integer", "minimum": 10, "maximum": 86_400,
                        "description": "How long the drain waits for the app to catch up before failing."},
}

DEFAULTS: dict[str, Any] = {
    "program": "1 2 1", "interval_s": 10, "records": 20_000, "keys": 500, "partitions": 4, "instances": 3,
    "rate": 0, "payload_bytes": 0, "bug": "none", "bug_every": 1000, "seed": 0, "drain_timeout_s": 180,
}

# What one record costs in a partition besides its payload: the larger of the contract's input and output
# JSON values (~130 B) plus key and record-batch overhead, rounded up. An estimate, kept on the safe side.
RECORD_OVERHEAD_BYTES = 160


class ParamsError(ValueError):
    """Params that cannot run; the message lists every problem."""


@dataclass(frozen=True)
class RunPlan:
    """Resolved params of one run: the program as a list, and the rate the generator will use."""

    program: list[int]
    program_source: str  # "given" | "random(seed=N)"
    interval_s: float
    records: int
    keys: int
    partitions: int
    instances: int
    rate: float
    payload_bytes: int
    bug: str
    bug_every: int
    seed: int
    drain_timeout_s: int

    @property
    def program_duration_s(self) -> float:
        return len(self.program) * self.interval_s

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check(params: dict[str, Any], partition_capacity_bytes: int | None = None) -> RunPlan:
    """Resolve ``params`` into a plan, or raise ``ParamsError`` naming each bad param."""
    values = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    errors = []
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        errors.append(f"unknown params {unknown}; known: {sorted(DEFAULTS)}")
    raw = values["program"]
    source = "given"
    program: list[int] = []
    if raw in ("", [], None):
        program = programs.random_program(values["seed"], values["instances"])
        source = f"random(seed={values['seed']})"
    else:
        try:
            program = programs.parse(raw, values["instances"])
        except programs.ProgramError as exc:
            errors.append(str(exc))
    if partition_capacity_bytes and not errors:
        per_partition = values["records"] / values["partitions"] * (values["payload_bytes"] + RECORD_OVERHEAD_BYTES)
        if per_partition > partition_capacity_bytes * 0.8:
            errors.append(
                f"records/payload_bytes/partitions: {values['records']} records of ~"
                f"{values['payload_bytes'] + RECORD_OVERHEAD_BYTES} B over {values['partitions']} partitions is "
                f"~{per_partition / 1e6:.1f} MB per partition, more than the backend keeps "
                f"({partition_capacity_bytes * 0.8 / 1e6:.1f} MB usable of {partition_capacity_bytes / 1e6:.0f} MB); "
                "raise partitions or lower records or payload_bytes")
    if errors:
        raise ParamsError("; ".join(errors))
    duration = len(program) * float(values["interval_s"])
    rate = float(values["rate"]) or values["records"] / duration
    return RunPlan(program=program, program_source=source, interval_s=float(values["interval_s"]),
                   records=values["records"], keys=values["keys"], partitions=values["partitions"],
                   instances=values["instances"], rate=rate, payload_bytes=values["payload_bytes"],
                   bug=values["bug"], bug_every=values["bug_every"], seed=values["seed"],
                   drain_timeout_s=values["drain_timeout_s"])
