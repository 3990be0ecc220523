"""What a run needs from outside before anything starts: Apache Kafka's jars of ``kafka_version``, the Kafka Streams
app built against ``streams_version`` (and the releases and versions the program's upgrades move to), the reference
worker's virtualenv of each ``worker_versions`` release, Spark's Kafka source for the checker, the external cluster's
connection (with settings the checker's Java client can use too), the images of the Docker runtime and backend on the
engine, root and nftables for a program that cuts links, the Java agent for a program that stalls a JVM app, and room
for the run's data on the disk that holds every run's evidence.
Checked by ``check_params`` and by ``make soak`` itself, so a run that cannot start is refused with one line, before
any broker, topic or container exists."""

from __future__ import annotations

import shutil

from kafka_soak import run_size
from kafka_soak.backends import kafka_jars, registry
from kafka_soak.checker import spark_kafka
from kafka_soak.clients import subjects as run_subjects
from kafka_soak.clients.profile import VERSION, render
from kafka_soak.clients.reference import releases, streams
from kafka_soak.faults.kinds import upgrade
from kafka_soak.faults.program import schedule
from kafka_soak.infra.connection import KafkaConnectionError
from kafka_soak.infra.docker_engine import DockerRuntimeError, docker_api, ensure_image
from kafka_soak.infra.network import NetworkError
from kafka_soak.plan import Plan
from kafka_soak.shared import rundir, stalls
from kafka_soak.toolchain import byteman, stall_agent
from kafka_soak.toolchain.maven import BuildError
from kafka_soak.toolchain.stall_agent import StallAgentError


class DiskSpaceError(RuntimeError):
    """A run whose data would not fit on the disk that holds the evidence of every run."""


# What the suite builds of its own apps before a run (``Profile.build``): each version of the Kafka Streams app, each
# confluent-kafka release's virtualenv of the reference worker.
BUILDS = {"streams": streams.build, "worker": releases.build}
ERRORS = (BuildError, KafkaConnectionError, DockerRuntimeError, DiskSpaceError, StallAgentError, NetworkError)
# What a run on brokers of its own keeps per input byte, on each broker: the input, what the app writes back (its
# outputs, changelogs, assertions), Kafka's indexes and transaction markers, and the checker's spill. The first 2-hour
# night of soak_nightly (Kafka Streams, 3 brokers) kept 3.2 per input byte on each (7.67 GiB for 0.80 GiB of input),
# past the 3 this was. A full disk fails every run on the machine, not one.
FOOTPRINT_PER_INPUT_BYTE = 4


def disk_problem(plan: Plan, free_bytes: int) -> str:
    """Why a run's data would not fit in ``free_bytes`` of the runs directory's disk ("" if it fits); a shared
    cluster's disk is its owner's."""
    if not registry.kind(plan["backend"]).starts_brokers:
        return ""
    size = run_size.of_plan(plan)  # every cluster of a broker version matrix, every app's state
    need = (size.input_bytes + size.state_bytes) * plan["brokers"] * FOOTPRINT_PER_INPUT_BYTE
    if need <= free_bytes:
        return ""
    return (f"records: {plan['records']} records of payload_bytes {plan['payload_bytes']} need about "
            f"{need / 2**30:.1f} GiB on {plan['brokers'] * size.clusters} broker(s) of this machine (input, outputs and "
            f"state), and the runs directory {rundir.runs_root()} has {free_bytes / 2**30:.1f} GiB free; lower records, "
            "payload_bytes or state_write_bytes, or free space")


def check(plan: Plan) -> None:
    """Raise one of ``ERRORS`` naming the param when something the plan needs is not there."""
    root = rundir.runs_root()
    problem = disk_problem(plan, shutil.disk_usage(next(p for p in (root, *root.parents) if p.exists())).free)
    if problem:
        raise DiskSpaceError(problem)
    registry.kind(plan["backend"]).preflight(plan)
    broker_releases, moved = upgrade.targets(schedule(plan["program"]))
    for release, token in broker_releases.items():  # what the program's bN^V move brokers to, as kafka_version's
        kafka_jars.resolve(release, param=f"program: {token}")
    app = run_subjects.profile(plan)
    for version in app.versions if app.build else []:
        BUILDS[app.build](version)  # built now (cached after), timed in the log
    for version, param in moved_to(moved).items() if app.build else []:
        BUILDS[app.build](version, param)  # what the program's N^V move instances to
    if any(s.get("broker") or app.stall == stalls.JVM for s in plan.get("stalls", [])):
        stall_agent.check(byteman.agent_jar(), root)  # fetched now, not by the step that starts an instance or broker
    spark_kafka.resolve()
    if plan["runtime"] == "docker":
        api = docker_api(plan["docker_url"], plan["docker_conn_id"] or None)
        for image, param, hint in app_images(plan):
            ensure_image(api, image, param, hint)


def moved_to(moved: dict[str, str]) -> dict[str, str]:
    """The versions the program's ``N^V`` move instances to, each with what a refusal names (its first token)."""
    return {version: f"program: {token}" for version, token in moved.items()}


def app_images(plan: Plan) -> list[tuple[str, str, str]]:
    """The images runtime=docker starts the app from (its versions', and those the program moves instances to):
    (image, what chose it, how to build it)."""
    app = run_subjects.profile(plan)
    moved = moved_to(upgrade.targets(schedule(plan["program"]))[1])
    return [(app.image_of(version), moved.get(version, app.image_param), render(app.image_hint, {VERSION: version}, {}))
            for version in dict.fromkeys([*app.versions, *moved])]
