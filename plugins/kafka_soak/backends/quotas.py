"""Client quotas of a run: Kafka's own ``kafka-configs`` tool (``ConfigCommand``) to set, verify and remove them.

confluent-kafka has no client-quota API (AlterClientQuotas / DescribeClientQuotas), so the quotas are set
with the tool Apache Kafka ships: from the project's Kafka jars (``local`` and ``external`` backends) or inside
the broker container (``docker``). A backend hands ``apply``/``remove`` a ``Runner`` that runs the tool with the
given arguments. A quota is only reported as applied after ``--describe`` shows exactly the values asked for.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

log = logging.getLogger(__name__)

# Runs kafka-configs with these arguments where the tool is and returns its output (raises on failure).
Runner = Callable[[list[str]], str]

SETTINGS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")

# Kafka's ConfigCommand prints one line per entity: "Quota configs for client-id 'x' are producer_byte_rate=35000.0"
DESCRIBED = re.compile(r"^Quota configs for (?P<entity>.+?) are (?P<configs>.*)$")
CLIENT_ID = re.compile(r"client-id '(?P<client_id>[^']*)'")


class QuotaError(RuntimeError):
    pass


@dataclass(frozen=True)
class Quota:
    """One client id's throttles (``None`` = not set)."""

    client_id: str
    producer_byte_rate: int | None = None
    consumer_byte_rate: int | None = None
    request_percentage: float | None = None

    def settings(self) -> dict[str, float]:
        return {name: float(value) for name, value in asdict(self).items() if name in SETTINGS and value is not None}

    def describe(self) -> str:
        return f"client-id {self.client_id!r}: " + ", ".join(f"{k}={exact(v)}" for k, v in self.settings().items())


def exact(value: float) -> str:
    """A quota value as the tool takes it, every digit kept: ``{:g}`` keeps six, so 1 MiB (1048576) became 1048580 and
    failed its own verification, and a shared cluster's 10485760 was restored as 10485800."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def from_params(values: list[dict[str, Any]]) -> list[Quota]:
    return [Quota(**value) for value in values]


def _tool(bootstrap: str, command_config: str | None) -> list[str]:
    return ["--bootstrap-server", bootstrap, *(["--command-config", command_config] if command_config
                                                             else [])]


def alter_command(quota: Quota, bootstrap: str, command_config: str | None = None) -> list[str]:
    return settings_command(quota.client_id, quota.settings(), bootstrap, command_config)


def settings_command(client_id: str, settings: dict[str, float], bootstrap: str,
                     command_config: str | None = None) -> list[str]:
    """Set a client id's quota ``settings``, any Kafka knows (a shared cluster's may have more than the run's three)."""
    return [*_tool(bootstrap, command_config), "--alter", "--add-config",
            ",".join(f"{k}={exact(v)}" for k, v in settings.items()), "--entity-type", "clients", "--entity-name",
            client_id]


def delete_command(client_id: str, settings: list[str], bootstrap: str, command_config: str | None = None) -> list[str]:
    return [*_tool(bootstrap, command_config), "--alter", "--delete-config", ",".join(settings),
            "--entity-type", "clients", "--entity-name", client_id]


def describe_command(client_id: str, bootstrap: str, command_config: str | None = None) -> list[str]:
    return [*_tool(bootstrap, command_config), "--describe", "--entity-type", "clients", "--entity-name", client_id]


def parse_describe(output: str) -> dict[str, dict[str, float]]:
    """``{client_id: {setting: value}}`` from ``kafka-configs --describe --entity-type clients`` output."""
    described: dict[str, dict[str, float]] = {}
    for line in output.splitlines():
        match = DESCRIBED.match(line.strip())
        if not match:
            continue
        client = CLIENT_ID.search(match["entity"])
        if client is None:  # a user-principal quota: not ours
            continue
        configs = {}
        for item in filter(None, (part.strip() for part in match["configs"].split(","))):
            name, _, value = item.partition("=")
            configs[name] = float(value)
        described[client["client_id"]] = configs
    return described


def verify(quota: Quota, described: dict[str, dict[str, float]]) -> None:
    """Raise ``QuotaError`` unless the broker describes exactly the settings asked for."""
    actual = described.get(quota.client_id)
    if actual is None:
        raise QuotaError(f"quota for {quota.describe()} was set but the broker describes no quota for that client id")
    wrong = {k: actual.get(k) for k, v in quota.settings().items() if actual.get(k) != v}
    if wrong:
        raise QuotaError(f"quota for {quota.describe()} did not take effect: the broker describes "
                         + ", ".join(f"{k}={v}" for k, v in wrong.items()))


def apply(quotas: list[Quota], run: Runner, bootstrap: str, command_config: str | None = None) -> list[dict[str, Any]]:
    """Set each quota, then describe it and verify the broker holds exactly those values; returns them as
    described, each with the client id's quota before the run (``previous``: what release puts back)."""
    applied: list[dict[str, Any]] = []
    for quota in quotas:
        previous = parse_describe(run(describe_command(quota.client_id, bootstrap, command_config)))
        entry = {"client_id": quota.client_id, **quota.settings(), "previous": previous.get(quota.client_id, {})}
        try:
            run(alter_command(quota, bootstrap, command_config))
            described = parse_describe(run(describe_command(quota.client_id, bootstrap, command_config)))
            verify(quota, described)
        except Exception:  # provision fails, and a teardown does not run after a failed setup: undo it here
            restore([*applied, entry], run, bootstrap, command_config)
            raise
        log.info("quota set and verified: %s", quota.describe())
        applied.append({**entry, **described[quota.client_id]})
    return applied


def restore(applied: list[dict[str, Any]], run: Runner, bootstrap: str, command_config: str | None = None) -> None:
    """Release: give each client id back the quota it had before the run (a quota that already existed on a shared
    cluster keeps its old values, whatever settings it has) and delete only what the run added, last set first: a
    client id the run set twice gets back what it had before the first. A failure is logged, not raised: the run's
    evidence is complete, and the log says what to put back by hand."""
    for entry in reversed(applied):
        client_id, previous = entry["client_id"], entry.get("previous", {})
        added = [k for k in entry if k in SETTINGS and k not in previous]
        try:
            if previous:
                run(settings_command(client_id, previous, bootstrap, command_config))
            if added:
                run(delete_command(client_id, added, bootstrap, command_config))
            log.info("quota of client-id %r restored to %s", client_id, previous or "none")
        except Exception as exc:
            log.error("could not restore the quota of client-id %r to %s: %s; restore it by hand", client_id,
                      previous or "none", exc)
