"""``nN-`` / ``nN+``: instance N's host loses / regains its network to every broker; ``nbN-`` / ``nbN+``: broker N is
cut from the other brokers (replication, the KRaft controller quorum) while clients still reach it. Packets are
dropped, so connections hang as across a lost link; they are not refused.

A cut is of the host, not of a process: the run gives each instance and each broker a network namespace of its own
(``infra.network``), so ``nN-`` may come at any point of the program (an instance that starts on a cut host starts
without a network, and a killed one comes back to it). Only a backend that starts the brokers in those namespaces
can (capability ``network_faults``), with instances on runtime ``local``. The drain heals every cut before it waits.
"""

from __future__ import annotations

import logging
import random
import re
from typing import TYPE_CHECKING, Any

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


class Network:
    name = "network"
    pattern = re.compile(r"^n(?P<broker>b?)(?P<n>[0-9]{1,4})(?P<dir>[+-])$")
    grammar = ("nN- / nN+ (instance N's network to the brokers cut / healed), "
               "nbN- / nbN+ (broker N cut from the other brokers / healed)")
    actions = ("cut", "heal", "broker-cut", "broker-heal")
    needs, needs_why = "network_faults", "cut network links"
    runtimes = ("local",)  # where instances can live in a namespace of the run's
    # A cut instance keeps its partitions until its session times out and its transaction until it is aborted, as a
    # paused one; a cut broker's partitions get leaders among the others, as a killed broker's do.
    grace = {"cut": MEMBER_LEFT_GRACE_S, "broker-cut": 30.0}
    lanes = {CUT: Lane(opens="cut", color="#5d4037", row="network"),
             HEALED: Lane(ends=lambda _event: "healed", row="network")}

    def advance(self, match: re.Match[str], position: str, state: ProgramState, limits: Limits,
                allowed: str) -> Target:
        n, cut, of_broker = int(match["n"]), match["dir"] == "-", bool(match["broker"])
        if of_broker:
            limits.broker(n, position)
            if limits.brokers is not None and limits.brokers < 2:
                raise ProgramError(f"program: {position}: cutting broker {n} from the other brokers needs 2 brokers "
                                   f"or more; this run has {limits.brokers} (param 'brokers')")
        else:
            limits.instance(n, position, allowed)
        host = f"{'broker' if of_broker else 'instance'} {n}"
        if cut == (host in state.cut):
            raise ProgramError(f"program: {position}: the network of {host} is {'already' if cut else 'not'} cut at "
                               f"that point")
        (state.cut.add if cut else state.cut.discard)(host)
        action = ("broker-" if of_broker else "") + ("cut" if cut else "heal")
        return Target(action, broker=n) if of_broker else Target(action, instance=n)

    def draw(self, rng: random.Random, state: ProgramState, limits: Limits, step_s: float) -> list[str]:
        """For a step, a running instance cut from every broker or, with two brokers or more, a broker cut from the
        others (one or the other at even odds where both can be)."""
        hosts = [f"n{n}" for n in state.running() if f"instance {n}" not in state.cut]
        if (limits.brokers or 1) >= 2 and not state.cut and not state.brokers_down:
            hosts += [f"nb{n}" for n in range(1, (limits.brokers or 1) + 1)]
        if not hosts:
            return []
        instances, brokers = [h for h in hosts if not h.startswith("nb")], [h for h in hosts if h.startswith("nb")]
        host = rng.choice(rng.choice([group for group in (instances, brokers) if group]))
        return [f"{host}-", f"{host}+"]

    def describe(self, target: Target) -> str:
        if target.broker:
            return f"{'cut' if target.action == 'broker-cut' else 'heal'} broker {target.broker} from the other brokers"
        return f"{target.action} instance {target.instance}'s network to the brokers"

    def apply(self, step: Step, instances: Instances, kafka: Backend) -> dict[str, Any]:
        network = network_of(instances)
        host = broker_host(step.broker) if step.broker else instance_host(step.instance)
        if step.action.endswith("cut"):
            peers = network.cut(host, [b for b in network.brokers if b != host])
            journal(instances.run_dir, CUT, **target_of(host), peers=peers)
            log.info("%s: cut from %s", host, ", ".join(peers))
            return {"link": "cut", "peers": peers}
        network.heal(host)
        journal(instances.run_dir, HEALED, **target_of(host))
        return {"link": "healed"}

    def restore(self, left: ProgramState, instances: Instances, kafka: Backend) -> dict[str, list[int]]:
        """Every cut host is healed, as the network says (a failed step may have left another state than the
        program's), before anything else is restored: a broker cut from the quorum could not come up."""
        network = RunNetwork.load(instances.run_dir)
        healed: dict[str, list[int]] = {"instances_healed": [], "brokers_healed": []}
        for host in network.cut_hosts() if network else []:
            log.warning("the program left %s cut: healing it to drain", host)
            network.heal(host)
            journal(instances.run_dir, HEALED, **target_of(host))
            [(what, n)] = target_of(host).items()
            healed[f"{what}s_healed"].append(n)
        return healed


KIND = Network()
