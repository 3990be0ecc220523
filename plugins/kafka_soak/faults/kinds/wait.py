"""Waits: steps that hold the program until the app did something, after which every later step keeps its distance to
that moment. ``wN``: until instance N got to work (it must be running); ``wr``: until the app's group is rebalancing
(a member joined or left and the coordinator waits for the others). Each is a no-op step when the app already is.

A reproduction times its faults against what the app does (a kill while a transaction holds the load, a kill while a
rebalance waits), and a clock alone cannot: on a loaded machine a JVM can take a minute to join its group, and the kill
then lands before the app did anything. Kafka's own system tests wait on the app for the same reason (``wait_until``
on ``REBALANCING -> RUNNING``). "At work" is what the resource verdict's warm-up starts from (``health.at_work``):
Kafka Streams' ``State transition from … to RUNNING``, the reference worker's first assignment, or the line a team's
profile names (``ready``), in the log of the instance's current life; "rebalancing" is the coordinator's word for the
group (read with AdminClient), whatever the app logs. Both hold for every version and control of a matrix.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.clients import health
from kafka_soak.faults.kind import Lane, Limits, ProgramError, ProgramState, Step, Target
from kafka_soak.infra import kafka_io
from kafka_soak.shared.rundir import journal

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

# How long a wait may hold the program: a JVM that has not joined its group in five minutes is a finding of its own.
LIMIT_S = 300.0
POLL_S = 0.5
REBALANCING = frozenset({"PREPARING_REBALANCING", "COMPLETING_REBALANCING"})


class WaitedInVain(RuntimeError):
    """What a wait waited for did not happen within ``LIMIT_S``, or its instance exited first."""


def hold(step: Step, waiting: set[str], done: Callable[[set[str]], set[str]], missing: str) -> float:
    """Poll ``done`` (which of the subjects still waited for are done now: one look at the app a round) until every
    one of ``waiting`` is; returns the seconds it took, or fails the step after ``LIMIT_S`` naming those still waited
    for (``missing``: what did not happen)."""
    began = time.time()
    while waiting:
        waiting -= done(waiting)
        if waiting and time.time() - began > LIMIT_S:
            raise WaitedInVain(f"{step.label}: {', '.join(s or 'the app' for s in sorted(waiting))}: {missing} "
                               f"within {LIMIT_S:.0f} s")
        if waiting:
            time.sleep(POLL_S)
    return round(time.time() - began, 1)


def said(ready: str) -> str:
    """What a wait looks for in an instance's log, in a person's words."""
    if ready:
        return f"app_profile.ready {ready!r} on a line that begins with its date and time"
    return ("Kafka Streams' 'State transition from … to RUNNING', the reference worker's 'assigned partitions'; a team's "
            "app names its own line in app_profile.ready")


class AtWork:
    name = "wait"
    pattern = re.compile(r"^w(?P<n>[0-9]{1,4})$")
    grammar = "wN (wait until instance N is at work)"
    actions = ("wait",)
    needs, needs_why = "", ""
    grace: dict[str, float] = {}
    lanes = {"at-work": Lane(label="at work")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n = int(match["n"])
        limits.instance(n, position, allowed)
        state.require(n, "wait for", ("running",), position)
        return Target("wait", instance=n)

    def describe(self, target: Target) -> str:
        return f"wait until instance {target.instance} is at work"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        """Every subject's instance N, until its current life's log says it got to work; the journal's ``at-work``
        event marks each moment on the instance's lane."""
        began, ready = time.time(), health.at_work(instances.app.ready)

        def at_work(waiting: set[str]) -> set[str]:
            instances.sync_logs()
            lives = instances.lives(step.instance)
            done = set()
            for subject in waiting:
                life = lives.get(subject)
                if life is None:
                    raise WaitedInVain(f"{step.label}: instance {step.instance} ({subject or 'the app'}) exited before "
                                       "it got to work")
                log = Path(life.log)
                if log.exists() and any(at >= life.started_at for at in health.ready_lines(log, ready)):
                    journal(instances.run_dir, "at-work", instance=step.instance, subject=subject,
                            waited_s=round(time.time() - began, 1))
                    done.add(subject)
            return done

        return {"waited_s": hold(step, {s.name for s in instances.subjects}, at_work,
                                 f"instance {step.instance} did not get to work: its log has no line that says so "
                                 f"({said(instances.app.ready)})")}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        return {}


class Rebalancing:
    name = "rebalance-wait"
    pattern = re.compile(r"^wr$")
    grammar = "wr (wait until the app's group is rebalancing)"
    actions = ("wait-rebalance",)
    needs, needs_why = "", "wait for the app's group to rebalance"
    group_protocols = ("classic",)  # the coordinator's group states read here are the classic protocol's
    grace: dict[str, float] = {}
    lanes: dict[str, Lane] = {}  # the group has no lane: the step's record keeps how long it waited

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        if not state.instances:
            raise ProgramError(f"program: {position}: cannot wait for the app's group to rebalance: no instance runs "
                               "at that point")
        return Target("wait-rebalance")

    def describe(self, target: Target) -> str:
        return "wait until the app's group is rebalancing"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        """Every subject's group, until its coordinator says it is rebalancing."""
        groups = {s.name: s.app_id for s in instances.subjects}
        bootstrap = instances.cluster.bootstrap_servers

        def rebalancing(waiting: set[str]) -> set[str]:
            states = kafka_io.group_states(bootstrap, [groups[subject] for subject in waiting])
            return {subject for subject in waiting if states[groups[subject]] in REBALANCING}

        return {"waited_s": hold(step, set(groups), rebalancing, "the app's group did not begin to rebalance")}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        return {}


AT_WORK, REBALANCE = AtWork(), Rebalancing()
# The actions that hold the program (``schedule.StepBook.delay``)
HOLDING = AT_WORK.actions + REBALANCE.actions
