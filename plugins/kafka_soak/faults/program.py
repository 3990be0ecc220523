"""The toggle program: what changes at which step (the soak's nemesis).

A program is a list of tokens, one per step, as in the original multi-runner reproduction:

==========  ===================================================================================
``N``       toggle instance *N*: start it when it is stopped, stop it gracefully otherwise
``0``       no-op step
``kN``      kill instance *N* with SIGKILL: no commit, no leave-group (it must be running or paused)
``pN``      pause instance *N* with SIGSTOP (it must be running)
``rN``      resume instance *N* with SIGCONT (it must be paused)
``sN@P:S``  stall the first thread of instance *N* that passes point *P* for *S* seconds (it must be running)
``bN-``     take broker *N* down; ``bN+`` brings it back
``nN-``     cut instance *N*'s host from every broker (packets dropped); ``nN+`` heals it
``nbN-``    cut broker *N* from the other brokers, clients still reach it; ``nbN+`` heals it
``bN^V``    restart broker *N* on Apache Kafka release *V* (a rolling upgrade's step)
``N^V``     restart instance *N* on version *V* of the app (it must be running)
==========  ===================================================================================

Each token is a step of one fault kind (``faults/kinds/``, one module each). Each step carries the **desired state**
it leads to (instance running/stopped/paused, broker up/down, a host's network cut or not), worked out from the
program up to that step, so a retried step converges instead of undoing itself. A program that asks for an
impossible transition (``r2`` while 2 runs) is refused before the run, naming the token.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kafka_soak.faults import kinds
from kafka_soak.faults.kind import FaultKind, Limits, ProgramError, ProgramState, Releases, Step
from kafka_soak.params import MAX_STEPS


def allowed(instances: int, brokers: int = 1) -> str:
    grammar = ", ".join(kind.grammar for kind in kinds.KINDS).format(instances=instances, brokers=brokers)
    return f"tokens separated by spaces: {grammar}; e.g. \"1 2 k1 1\""


def parse(program: str | list[int | str], instances: int, brokers: int = 1,
          releases: Releases | None = None) -> list[str]:
    """Validate ``"1 2 k1 1"`` or ``[1, 2, "k1", 1]``; returns the normalised tokens.

    Checks the range of every number and that each operation is possible at its point of the program (an upgrade's
    move, given what the run starts on: ``releases``).
    """
    tokens = program.split() if isinstance(program, str) else list(program)
    normal = [str(t).strip() for t in tokens]
    if not normal:
        raise ProgramError(f"program: has no steps; allowed: {allowed(instances, brokers)} (or leave it empty "
                           "for a random program from seed)")
    if len(normal) > MAX_STEPS:
        raise ProgramError(f"program: {len(normal)} steps, more than the {MAX_STEPS} a run can map (Airflow's "
                           "max_map_length); split the soak into several runs or lengthen interval_s")
    run(normal, limits=Limits(instances, brokers, releases or Releases()))
    return normal


def run(program: list[str], t0: float = 0.0, interval_s: float = 0.0,
        limits: Limits | None = None, state: ProgramState | None = None) -> tuple[list[Step], ProgramState]:
    """Each step with the action that leads to its desired state, firing at ``t0 + i * interval_s``, and the state
    the program leaves; checked against ``limits`` (none: the tokens alone), from ``state`` (none: nothing runs)."""
    state, limits = state or ProgramState(), limits or Limits()
    listed = allowed(limits.instances or 1, limits.brokers or 1)
    result = []
    for i, token in enumerate(program):
        position = f"token {token!r} at position {i + 1}"
        found = kinds.matching(token)
        if found is None:
            raise ProgramError(f"program: {position} is not an operation; allowed: {listed}")
        kind, match = found
        target = kind.advance(match, position, state, limits, listed)
        result.append(Step(i, token, target.action, target.instance, target.broker, t0 + i * interval_s,
                           kind.describe(target)))
    return result, state


def schedule(program: list[str], t0: float = 0.0, interval_s: float = 0.0) -> list[Step]:
    """Each step with the action that leads to its desired state, firing at ``t0 + i * interval_s``."""
    return run(program, t0, interval_s)[0]


def left(program: list[str]) -> ProgramState:
    """What the program leaves: instances running or paused, brokers down."""
    return run(program)[1]


def kinds_in(program: list[str]) -> list[tuple[FaultKind, list[str]]]:
    """Each fault kind the program uses, with its tokens."""
    steps = schedule(program)
    return [(kind, [s.token for s in steps if s.action in kind.actions]) for kind in kinds.KINDS
            if any(s.action in kind.actions for s in steps)]


def random_program(seed: int, instances: int, length: int | None = None, brokers: int = 1,
                   faults: Sequence[str] = (), every: int = 1, step_s: float = 10.0) -> list[str]:
    """A seeded program that can be replayed from the seed, ``length`` steps of ``step_s`` seconds long.

    Without ``faults``: toggles of random instances (default length: two per instance). With them (names of
    ``kinds.DRAWN``): every instance starts, then a fault every ``every`` steps, each undone before the next; the kinds
    take turns in an order shuffled each round, so that each comes as often as the others whatever the seed (default
    length: each kind twice). A kind that nothing can take at its turn (no broker to spare) leaves its turn quiet."""
    rng = random.Random(seed)
    if not faults:
        return [str(rng.randint(1, instances)) for _ in range(length or 2 * instances)]
    limits = Limits(instances, brokers)
    total = length or instances + 2 * len(faults) * every
    program = [str(n) for n in range(1, instances + 1)]
    state = run(program, limits=limits)[1]
    turns: list[str] = []
    while len(program) < total:
        turns = turns or rng.sample(list(faults), len(faults))
        tokens = kinds.DRAWN[turns.pop()].draw(rng, state, limits, step_s)
        if len(program) + len(tokens) > total:
            break
        state = run(tokens, limits=limits, state=state)[1]
        program += tokens + ["0"] * (every - len(tokens))
    return (program + ["0"] * total)[:total]


def render(program: list[str]) -> str:
    return " ".join(program)
