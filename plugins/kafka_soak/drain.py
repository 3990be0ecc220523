"""Drain: after the program and the generator, wait until the app has committed everything it consumed.

Kafka's system-test verifier does the same before it judges: the group's committed offsets reach the
end of the input. Offsets sent to a transaction become committed only when that transaction commits,
so zero lag also means no transaction over the input is still open (the embedded broker cannot list
transactions; this check is what holds there).
"""

from __future__ import annotations

import logging
import time

from kafka_soak import kafka_io
from kafka_soak import program as programs
from kafka_soak.instances import Instances
from kafka_soak.rundir import journal

log = logging.getLogger(__name__)


class DrainTimeout(RuntimeError):
    pass


def restore_service(instances: Instances, program: list[str]) -> dict[str, list[int]]:
    """Undo what the program left broken so the app can catch up: brokers down come up, paused instances
    resume, and instance 1 starts when none runs. Returns what was done."""
    down = programs.brokers_left_down(program)
    done: dict[str, list[int]] = {"brokers_up": sorted(down), "resumed": [], "started": []}
    for broker in sorted(down):
        log.warning("the program left broker %d down: bringing it up to drain", broker)
        instances.set_broker(broker, up=True)
    for n in instances.paused():
        log.warning("the program left instance %d paused: resuming it to drain", n)
        instances.resume(n)
        done["resumed"].append(n)
    if keep_one_running(instances):
        done["started"].append(1)
    return done


def keep_one_running(instances: Instances) -> bool:
    """An instance that exited during the drain (a crash, a stuck-transaction exit) is replaced by instance 1.
    Returns whether one had to be started."""
    if instances.running():
        return False
    log.warning("no instance is running: starting instance 1 to finish the drain")
    instances.start(1, "drain")
    return True


def wait_for_zero_lag(bootstrap: str, group: str, topic: str, timeout_s: float, poll_s: float = 2.0,
                      settle_polls: int = 2, instances: Instances | None = None) -> float:
    """Block until the group's lag on ``topic`` is 0 for ``settle_polls`` polls in a row; returns seconds waited.
    With ``instances``, one instance is kept running meanwhile."""
    started = time.monotonic()
    zero_streak = 0
    last_lag = None
    while True:
        if instances is not None:
            keep_one_running(instances)
        lag = kafka_io.group_lag(bootstrap, group, topic)
        total = sum(lag.values())
        waited = time.monotonic() - started
        rate = "" if last_lag is None else f", {(last_lag - total) / poll_s:.0f} records/s"
        log.info("drain: lag %d records%s (%s)", total, rate, ", ".join(f"p{p}={n}" for p, n in sorted(lag.items())))
        if instances is not None:
            journal(instances.run_dir, "lag", lag=total, source="drain")
        last_lag = total
        zero_streak = zero_streak + 1 if total == 0 else 0
        if zero_streak >= settle_polls:
            return waited
        if waited > timeout_s:
            raise DrainTimeout(f"drain: the app's group {group!r} still lags {total} records on {topic} after "
                               f"{timeout_s:.0f} s (param drain_timeout_s); per partition: {lag}")
        time.sleep(poll_s)
