"""``sN@POINT:SECONDS``: in instance N (it must be running), the first thread that passes POINT stops there for
SECONDS while every other thread of the process runs on: a stream thread stuck in a long GC of its own, a slow call, a
lock, while its producer's network thread and its consumer's heartbeat go on. A whole-process pause (``pN``) cannot
do that: the broker then sees nothing at all of the instance.

POINT is ``commit`` (between a transaction's offsets and its commit), ``process`` (inside an open transaction, as the
next record goes to the producer), or a JVM app's own ``package.Class#method`` (``shared/stalls.py`` says what each
is; ``toolchain/stall_agent.py`` how a JVM is stalled). The step arms the stall; the thread takes it when it gets
there, which the timeline draws as a span of its own on the instance's lane.

``sbN@append:SECONDS`` stalls a thread of broker N (it must be up) the same way, through the same agent in the
broker's JVM: the first request handler thread about to append a client's transactional records to a partition where
their transaction is already ongoing waits there, between the broker's decision that they need no verification and
the append, while the broker serves everything else (the coordinator's markers included).
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_soak.backends.kafka_jars import broker_versions
from kafka_soak.backends.kafka_releases import release_of
from kafka_soak.faults.kind import MEMBER_LEFT_GRACE_S, RUNNING, Lane, Limits, ProgramError, ProgramState, Step, Target
from kafka_soak.shared import stalls
from kafka_soak.shared.rundir import EVENTS, append_jsonl, journal
from kafka_soak.toolchain import stall_agent

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances
    from kafka_soak.clients.profile import Profile

log = logging.getLogger(__name__)
# The end of a broker thread's stall: its lane draws the stall and, as for its outages, nothing after.
BROKER_RESUMED = "broker-resumed"
# What the drain's end allows a stall still under way, beyond its own seconds, to end on its own.
RESUME_GRACE_S = 5.0


def of_step(step: Step) -> stalls.Stall:
    """The stall a step of this kind arms."""
    match = Stall.pattern.match(step.token)
    assert match is not None, step.token
    return stalls.Stall(step.index, step.instance, match["point"], int(match["seconds"]),
                        broker=step.broker if match["b"] else 0)


def planned(steps: list[Step]) -> list[stalls.Stall]:
    """The stalls of a program, as the instances' agent needs them before they start."""
    return [of_step(s) for s in steps if s.action == "stall"]


def problems(steps: list[Step], app: Profile, values: Mapping[str, Any]) -> list[str]:
    """Why the app or the brokers cannot be stalled as the program asks, one line per token."""
    errors = []
    for stall in planned(steps):
        position = f"token {steps[stall.step].token!r} at position {stall.step + 1}"
        if stall.broker:
            errors += broker_problems(position, values)
        elif not app.stall:
            errors.append(f"program: {position}: the app under test ({app.title_or_name}) cannot be stalled: its "
                          f"profile says no way (app_profile.stall: {stalls.JVM!r} for a JVM app, {stalls.CONTRACT!r} "
                          "for an app that keeps the suite's stall protocol)")
        elif stall.point not in stalls.POINTS and app.stall != stalls.JVM:
            errors.append(f"program: {position}: a method ({stall.point}) is a point of a JVM app only; "
                          f"{app.title_or_name} is stalled by its own protocol at {', '.join(stalls.POINTS)}")
        elif values["runtime"] != "local":
            errors.append(f"program: {position}: a stall needs runtime 'local' (its arm and trace files are in the "
                          f"run directory, which a container does not see; runtime is {values['runtime']!r})")
    return errors


def broker_problems(position: str, values: Mapping[str, Any]) -> list[str]:
    """A broker's thread is stalled by the agent the run starts the broker with, at a method of the broker's own Java
    log (``UnifiedLog``, in Java from Apache Kafka 4.1)."""
    if values["backend"] != "local":
        return [f"program: {position}: a stall of a broker needs backend 'local' (the run starts its brokers with the "
                f"agent that stalls them; backend is {values['backend']!r})"]
    param, releases = broker_versions(values)
    older = [r for r in releases if release_of(r) < stall_agent.BROKER_STALLS_SINCE]
    if older:
        since = ".".join(map(str, stall_agent.BROKER_STALLS_SINCE))
        return [f"program: {position}: a stall of a broker needs Apache Kafka {since} or later (the method it stalls "
                f"at is of the broker's Java log from {since} on); {param} has {', '.join(older)}"]
    return []


class Stall:
    name = "stall"
    pattern = re.compile(r"^s(?P<b>b?)(?P<n>[0-9]{1,4})@(?P<point>[A-Za-z0-9_$.#]{1,300}):(?P<seconds>[0-9]{1,5})$")
    grammar = ("sN@POINT:SECONDS (stall a thread of instance N at commit, process or a JVM app's Class#method), "
               "sbN@append:SECONDS (a thread of broker N as it appends a transaction's records)")
    actions = ("stall",)
    needs, needs_why = "", ""
    # A thread stalled past its transaction's timeout is fenced and its transaction aborted; past max.poll.interval.ms
    # its member leaves the group: as a paused member, it may leave its partitions to wait out a session.
    grace = {"stall": MEMBER_LEFT_GRACE_S}
    lanes = {"stall-armed": Lane(mark="stall armed"),
             stalls.STALLED: Lane(ends=lambda _event: "a thread stalled", opens="stalled", color="#ef6c00"),
             stalls.RESUMED: Lane(ends=lambda _event: "resumed", opens="running", color=RUNNING),
             BROKER_RESUMED: Lane(ends=lambda _event: "resumed")}  # a broker's lane draws only its outages

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n, point, seconds = int(match["n"]), match["point"], int(match["seconds"])
        if not 1 <= seconds <= stalls.MAX_SECONDS:
            raise ProgramError(f"program: {position}: a stall of {seconds} s; allowed: 1 to {stalls.MAX_SECONDS} s")
        if match["b"]:
            limits.broker(n, position)
            if point not in stalls.BROKER_POINTS:
                raise ProgramError(f"program: {position}: {point!r} is no point a broker's thread can be stalled at; "
                                   f"allowed: {', '.join(stalls.BROKER_POINTS)}")
            if n in state.brokers_down:
                raise ProgramError(f"program: {position}: cannot stall a thread of broker {n}: it is down at that point "
                                   f"(bring it up first with b{n}+)")
            return Target("stall", broker=n, detail=f"at {point} for {seconds} s")
        limits.instance(n, position, allowed)
        if point not in stalls.POINTS and not stalls.METHOD_POINT.fullmatch(point):
            raise ProgramError(f"program: {position}: {point!r} is no point a thread can be stalled at; allowed: "
                               f"{', '.join(stalls.POINTS)}, or a JVM app's method as package.Class#method")
        state.require(n, "stall", ("running",), position)
        return Target("stall", instance=n, detail=f"at {point} for {seconds} s")

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """The record processing of a running instance stalled for half a step (it ends by itself)."""
        running = state.running()
        return [f"s{rng.choice(running)}@process:{max(1, int(step_s / 2))}"] if running else []

    def describe(self, target: Target) -> str:
        if target.broker:
            return f"stall a request handler thread of broker {target.broker} {target.detail}"
        return f"stall a thread of instance {target.instance} {target.detail}"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        stall = of_step(step)
        if stall.broker:
            stalls.arm(stalls.broker_dir(instances.run_dir, stall.broker), stall)
            journal(instances.run_dir, "stall-armed", broker=stall.broker, step=stall.step, point=stall.point,
                    seconds=stall.seconds)
            log.info("armed: the next thread of broker %d at %s stalls for %d s", stall.broker, stall.point,
                     stall.seconds)
        else:
            instances.stall(stall)
            log.info("armed: the next thread of instance %d at %s stalls for %d s", stall.instance, stall.point,
                     stall.seconds)
        return {"point": stall.point, "seconds": stall.seconds}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        """Nothing: a stall armed but not yet taken stays armed into the drain. The step asked for the thread's next
        pass, and a slow machine can get the app there only after the program's last step; disarming it then would
        let the run pass without its fault. The drain's wait covers a stall under way (it waits for lag 0)."""
        return {}

    def conclude(self, instances: Instances) -> dict[str, list[int]]:
        """Once the app caught up (or the drain ended): a stall no thread reached is disarmed, one under way is let
        end (its seconds at most); then what each instance and broker traced goes into the run's events, at the
        moments it happened."""
        disarmed, traced = [], []
        for place in places(instances):
            for step in stalls.disarm(place.directory):
                log.warning("no thread of %s reached the stall of step %d by the end of the drain: disarmed",
                            place.who, step)
                disarmed.append(step)
            deadline = time.monotonic() + place.longest_s + RESUME_GRACE_S
            while (any(t["resumed"] is None for t in stalls.traced(place.directory)) and place.alive()
                   and time.monotonic() < deadline):
                time.sleep(0.5)
            for trace in stalls.traced(place.directory):
                for field, event in ((stalls.STALLED, stalls.STALLED), (stalls.RESUMED, place.resumed)):
                    if trace[field] is not None:
                        append_jsonl(instances.run_dir / EVENTS, {"t": trace[field], "event": event, **place.fields,
                                                                 "step": trace["step"], "thread": trace["thread"]})
                traced.append(int(trace["step"]))
        return {"stalls_disarmed": sorted(set(disarmed)), "stalls_traced": sorted(set(traced))}


@dataclass
class Place:
    """Where stalls were armed: an instance of a subject, or a broker; what its events say of it, its longest stall,
    and whether its process still runs (a stall under way ends with it)."""

    who: str
    fields: dict[str, Any]
    directory: Path
    longest_s: float
    alive: Callable[[], bool]
    resumed: str = stalls.RESUMED  # the event of a stall's end (an instance runs on, a broker's lane closes)


def places(instances: Instances) -> list[Place]:
    """Every stall directory of the run that exists: each instance's (of each subject), each broker's."""
    def longest(chosen: Callable[[stalls.Stall], bool]) -> float:
        return max((s.seconds for s in instances.stalls if chosen(s)), default=0)

    found = [Place(f"instance {n}", {"instance": n, "subject": subject.name}, directory,
                   longest(lambda s, n=n: not s.broker and s.instance == n), lambda n=n: instances.is_running(n))
             for subject, n, directory in instances.stall_dirs()]
    for broker in sorted({s.broker for s in instances.stalls if s.broker}):
        directory = stalls.broker_dir(instances.run_dir, broker)
        if directory.is_dir():
            found.append(Place(f"broker {broker}", {"broker": broker}, directory,
                               longest(lambda s, b=broker: s.broker == b), lambda: True, BROKER_RESUMED))
    return found


KIND = Stall()
