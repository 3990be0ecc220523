"""Network cuts, two kinds a random program draws apart (param random_program's faults), since they test different
things: ``nN-`` / ``nN+`` (kind ``instance-cut``): instance N's host loses / regains its network to every broker, what
a client's lost link does to its group and its transactions; ``nbN-`` / ``nbN+`` (kind ``broker-cut``): broker N is
cut from the other brokers (replication, the KRaft controller quorum, the transaction coordinator's verification)
while clients still reach it, what Kafka itself does with a split cluster. Packets are dropped, so connections hang as
across a lost link; they are not refused.

A cut is of the host, not of a process: the run gives each instance and each broker a network namespace of its own
(``infra.network``), so ``nN-`` may come at any point of the program (an instance that starts on a cut host starts
without a network, and a killed one comes back to it). Only a backend that starts the brokers in those namespaces
can (capability ``network_faults``), with instances on runtime ``local``. The drain heals every cut before it waits.
"""

from __future__ import annotations

import logging
import random
import re
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_soak.faults.kind import MEMBER_LEFT_GRACE_S, Lane, Limits, ProgramError, ProgramState, Step, Target
from kafka_soak.infra.network import RunNetwork, broker_host, instance_host, target_of
from kafka_soak.shared.rundir import journal

if TYPE_CHECKING:
    from kafka_soak.backends.registry import Backend
    from kafka_soak.clients.instances import Instances

log = logging.getLogger(__name__)

CUT, HEALED = "link-cut", "link-healed"  # events.jsonl


def network_of(instances: Instances) -> RunNetwork:
    network = RunNetwork.load(instances.run_dir)
    if network is None:
        raise RuntimeError(f"the run has no network of its own ({instances.run_dir}/network.json): its backend "
                           "provisioned none, so no link can be cut")
    return network


class Cut:
    """What both kinds of cut share: the network they need, how a step is checked, applied and undone; each kind says
    which hosts it cuts (``target``: ``instance`` or ``broker``) and from what."""

    target: ClassVar[str]
    actions: ClassVar[tuple[str, str]]  # cut, heal
    needs = "network_faults"
    runtimes = ("local",)  # where instances can live in a namespace of the run's
    lanes = {CUT: Lane(opens="cut", color="#5d4037", row="network"),
             HEALED: Lane(ends=lambda _event: "healed", row="network")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n, cut = int(match["n"]), match["dir"] == "-"
        self.check(n, position, limits, allowed)
        host = f"{self.target} {n}"
        if cut == (host in state.cut):
            raise ProgramError(f"program: {position}: the network of {host} is {'already' if cut else 'not'} cut at "
                               f"that point")
        (state.cut.add if cut else state.cut.discard)(host)
        return Target(self.actions[not cut], **{self.target: n})

    def check(self, n: int, position: str, limits: Limits, allowed: str) -> None:
        """Refuse a host the run does not have."""
        raise NotImplementedError

    def host(self, n: int) -> str:
        """The network's name of the host."""
        raise NotImplementedError

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        network = network_of(instances)
        host = self.host(step.broker or step.instance)
        if step.action == self.actions[0]:
            peers = network.cut(host, [b for b in network.brokers if b != host])
            journal(instances.run_dir, CUT, **target_of(host), peers=peers)
            log.info("%s: cut from %s", host, ", ".join(peers))
            return {"link": "cut", "peers": peers}
        network.heal(host)
        journal(instances.run_dir, HEALED, **target_of(host))
        return {"link": "healed"}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        """Every host of this kind that is cut, as the network says (a failed step may have left another state than
        the program's), is healed before anything else is restored: a broker cut from the quorum could not come up."""
        network = RunNetwork.load(instances.run_dir)
        healed: list[int] = []
        for host in network.cut_hosts() if network else []:
            [(what, n)] = target_of(host).items()
            if what == self.target:
                log.warning("the program left %s cut: healing it to drain", host)
                network.heal(host)
                journal(instances.run_dir, HEALED, **target_of(host))
                healed.append(n)
        return {f"{self.target}s_healed": healed}


class InstanceCut(Cut):
    name = "instance-cut"
    target = "instance"
    pattern = re.compile(r"^n(?P<n>[0-9]{1,4})(?P<dir>[+-])$")
    grammar = "nN- / nN+ (instance N's network to the brokers cut / healed)"
    needs_why = "cut network links"
    actions = ("cut", "heal")
    # A cut instance keeps its partitions until its session times out and its transaction until it is aborted, as a
    # paused one does.
    grace = {"cut": MEMBER_LEFT_GRACE_S}

    def check(self, n: int, position: str, limits: Limits, allowed: str) -> None:
        limits.instance(n, position, allowed)

    def host(self, n: int) -> str:
        return instance_host(n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """For a step, a running instance cut from every broker."""
        hosts = [n for n in state.running() if f"instance {n}" not in state.cut]
        if not hosts:
            return []
        n = rng.choice(hosts)
        return [f"n{n}-", f"n{n}+"]

    def describe(self, target: Target) -> str:
        return f"{target.action} instance {target.instance}'s network to the brokers"


class BrokerCut(Cut):
    name = "broker-cut"
    target = "broker"
    pattern = re.compile(r"^nb(?P<n>[0-9]{1,4})(?P<dir>[+-])$")
    grammar = "nbN- / nbN+ (broker N cut from the other brokers / healed)"
    needs_why = "cut brokers from one another"
    actions = ("broker-cut", "broker-heal")
    grace = {"broker-cut": 30.0}  # its partitions get leaders among the others, as a killed broker's do

    def check(self, n: int, position: str, limits: Limits, allowed: str) -> None:
        limits.broker(n, position)
        if limits.brokers is not None and limits.brokers < 2:
            raise ProgramError(f"program: {position}: cutting broker {n} from the other brokers needs 2 brokers "
                               f"or more; this run has {limits.brokers} (param 'brokers')")

    def host(self, n: int) -> str:
        return broker_host(n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """For a step, with two brokers or more all up and none cut, one of them cut from the others."""
        if (limits.brokers or 1) < 2 or state.cut or state.brokers_down:
            return []
        n = rng.randint(1, limits.brokers)
        return [f"nb{n}-", f"nb{n}+"]

    def describe(self, target: Target) -> str:
        return f"{'cut' if target.action == 'broker-cut' else 'heal'} broker {target.broker} from the other brokers"


INSTANCES, BROKERS = InstanceCut(), BrokerCut()
