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
from kafka_soak.guarantees import unreliable_anomalies

PARAM_SCHEMAS: dict[str, dict[str, Any]] = {
    "program": {"type": ["string", "array"], "items": {"type": ["integer", "string"]},
                "description": "One operation per step: N toggles instance N (\"1 2 1\" = start 1, start 2, stop 1), "
                               "0 = no-op, kN = kill -9, pN/rN = pause/resume (SIGSTOP/SIGCONT), bN-/bN+ = broker N "
                               "down/up. Empty: a random program from `seed`, stored with the run for replay."},
    "interval_s": {"type": "number", "minimum": 1, "maximum": 3600,
                   "description": "Seconds between two program steps."},
    "records": {"type": "integer", "minimum": 1, "maximum": 100_000_000,
                "description": "Input records the generator produces while the program runs."},
    "keys": {"type": "integer", "minimum": 1, "description": "Distinct entity keys the records cycle over."},
    "partitions": {"type": "integer", "minimum": 1, "maximum": 256,
                   "description": "Partitions of the input, output and changelog topics."},
    "instances": {"type": "integer", "minimum": 1, "maximum": 32,
                  "description": "How many app instances the program may toggle."},
    "brokers": {"type": "integer", "minimum": 1, "maximum": 5,
                "description": "Brokers of the embedded cluster (the program's bN-/bN+ take broker N down/up)."},
    "standbys": {"type": "integer", "minimum": 0, "maximum": 1,
                 "description": "Standby replicas of the reference app: 1 = an instance keeps a warm copy of every "
                                "partition it loses by tailing its changelog (Kafka Streams places a standby on the "
                                "previous owner); 0 = state is dropped on revoke and restored on the next assignment."},
    "cache_entries": {"type": "integer", "minimum": 0, "maximum": 10_000_000,
                      "description": "Entries of the reference app's write-back cache per partition store "
                                     "(flushed to the store and changelog at each commit); 0 disables caching."},
    "phases": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["records"],
        "properties": {"records": {"type": "integer", "minimum": 1}, "at_s": {"type": "number", "minimum": 0},
                       "after_step": {"type": "integer", "minimum": 0}, "rate": {"type": "number", "minimum": 0}},
        "oneOf": [{"required": ["at_s"]}, {"required": ["after_step"]}]},
        "description": "Load in bursts tied to the program: [{\"records\": N, \"at_s\": S | \"after_step\": I, "
                       "\"rate\": R}], produced in order; at_s counts from the first step, after_step waits until "
                       "step I (0-based) was applied, rate 0 = full speed. The records of all phases must add up to "
                       "`records`. Empty: one steady phase over the whole program at `rate`."},
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
    "brokers": 1, "standbys": 0, "cache_entries": 1000, "phases": [], "rate": 0, "payload_bytes": 0,
    "bug": "none", "bug_every": 1000, "seed": 0, "drain_timeout_s": 180,
}

# What one record costs in a partition besides its payload: the larger of the contract's values (an output,
# ~123 B) plus key and record-batch overhead. Measured on the embedded broker: a partition of such records
# keeps ~33 000 of them (~150 B each) before dropping its oldest segment. Runs may use 95 % of that.
RECORD_OVERHEAD_BYTES = 150
USABLE_FRACTION = 0.95


class ParamsError(ValueError):
    """Params that cannot run; the message lists every problem."""


@dataclass(frozen=True)
class RunPlan:
    """Resolved params of one run: the program as tokens, the load as phases, what the verdict can vouch for."""

    program: list[str]
    program_source: str  # "given" | "random(seed=N)"
    interval_s: float
    records: int
    keys: int
    partitions: int
    instances: int
    brokers: int
    standbys: int
    cache_entries: int
    phases: list[dict[str, Any]]  # each: records, first_id, rate, and at_s or after_step
    rate: float
    payload_bytes: int
    bug: str
    bug_every: int
    seed: int
    drain_timeout_s: int
    unreliable: dict[str, str]  # anomaly -> why this run cannot pin it on the app (see guarantees.py)

    @property
    def program_duration_s(self) -> float:
        return len(self.program) * self.interval_s

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve_phases(values: dict[str, Any], steps: int, rate: float) -> tuple[list[dict[str, Any]], list[str]]:
    """The generator's phases with their id ranges, and the problems found (the caller reports them)."""
    given = values["phases"] or [{"records": values["records"], "at_s": 0, "rate": rate}]
    errors = []
    total = sum(p["records"] for p in given)
    if total != values["records"]:
        errors.append(f"phases: their records add up to {total} but param records is {values['records']}; "
                      "make them equal")
    phases, first_id = [], 1
    for n, phase in enumerate(given, start=1):
        if phase.get("after_step") is not None and phase["after_step"] >= steps:
            errors.append(f"phases: phase {n} waits for step {phase['after_step']} but the program has {steps} "
                          f"steps (0..{steps - 1})")
        phases.append({**phase, "rate": float(phase.get("rate", 0)), "first_id": first_id})
        first_id += phase["records"]
    return phases, errors


def check(params: dict[str, Any], partition_capacity_bytes: int | None = None,
          limitations: dict[str, str] | None = None) -> RunPlan:
    """Resolve ``params`` into a plan for a backend, or raise ``ParamsError`` naming each bad param."""
    values = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    errors = []
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        errors.append(f"unknown params {unknown}; known: {sorted(DEFAULTS)}")
    raw = values["program"]
    source = "given"
    program: list[str] = []
    if raw in ("", [], None):
        program = programs.random_program(values["seed"], values["instances"])
        source = f"random(seed={values['seed']})"
    else:
        try:
            program = programs.parse(raw, values["instances"], values["brokers"])
        except programs.ProgramError as exc:
            errors.append(str(exc))
    if partition_capacity_bytes:
        per_partition = values["records"] / values["partitions"] * (values["payload_bytes"] + RECORD_OVERHEAD_BYTES)
        if per_partition > partition_capacity_bytes * USABLE_FRACTION:
            errors.append(
                f"records/payload_bytes/partitions: {values['records']} records of ~"
                f"{values['payload_bytes'] + RECORD_OVERHEAD_BYTES} B over {values['partitions']} partitions is "
                f"~{per_partition / 1e6:.1f} MB per partition, more than the backend keeps "
                f"({partition_capacity_bytes * USABLE_FRACTION / 1e6:.1f} MB usable of {partition_capacity_bytes / 1e6:.0f} MB); "
                "raise partitions or lower records or payload_bytes")
    duration = max(len(program), 1) * float(values["interval_s"])
    rate = float(values["rate"]) or values["records"] / duration
    phases, phase_errors = resolve_phases(values, len(program), rate)
    errors.extend(phase_errors if program else [])
    if errors:
        raise ParamsError("; ".join(errors))
    return RunPlan(program=program, program_source=source, interval_s=float(values["interval_s"]),
                   records=values["records"], keys=values["keys"], partitions=values["partitions"],
                   instances=values["instances"], brokers=values["brokers"], standbys=values["standbys"],
                   cache_entries=values["cache_entries"], phases=phases, rate=rate,
                   payload_bytes=values["payload_bytes"], bug=values["bug"], bug_every=values["bug_every"],
                   seed=values["seed"], drain_timeout_s=values["drain_timeout_s"],
                   unreliable=unreliable_anomalies(limitations or {}, programs.faults(program)))
