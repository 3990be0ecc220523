"""The apps under test of one run, from its app's profile (the plan's ``app_profile``: a team's app, or the suite's
own from ``clients/reference/profiles.py``): one, or one per member a run compares (the versions of a team's app; the Kafka
Streams versions, workflow designs or controls of the suite's Kafka Streams app).

A matrix runs its members side by side on the same broker, fed by the same input topic and toggled by the same
program step at the same moment: every member sees exactly the same load and the same program timing, so a
difference in the verdicts is the members' own. (Running them one after the other would take N times as long
and give each a different load and timing.) Each subject has its own application id (so its own consumer group,
changelogs and transactional ids), its own copy of every topic but the input (``<name>.<member>``), its own
instances (``instance-<n>@<member>``) and its own verdict per judged output.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_soak.clients import profile as profiles
from kafka_soak.shared import contracts

if TYPE_CHECKING:
    from kafka_soak.plan import Plan


@dataclass(frozen=True)
class Subject:
    name: str  # "" for a run's only app; the member's name in a matrix
    app_id: str  # application.id / group.id
    version: str  # what the command's {version} takes ("" for none)
    topics: dict[str, str]  # each of the app's topics, by the name the app knows it, as this subject's own
    outputs: list[dict[str, Any]] = field(default_factory=list)  # its judged outputs, as the checker takes them
    args: list[str] = field(default_factory=list)  # options only this member gets (a design's, a control's)

    def process(self, instance: int) -> str:
        """Its instance's name in the run's process registry."""
        return f"instance-{instance}" + (f"@{self.name}" if self.name else "")

    def label(self, instance: int) -> str:
        return f"instance {instance}" + (f" @{self.name}" if self.name else "")

    def topic(self, name: str) -> str:
        """Its topic of one of the contract's names (``output``, ``assertions``, ...), "" when the app has none."""
        return self.topics.get(name, "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def profile(plan: Plan) -> profiles.Profile:
    """The app under test."""
    return profiles.Profile.of(plan["app_profile"])


def describe(plan: Plan) -> str:
    """The app under test in a few words, for the run's log."""
    app = profile(plan)
    judged = "; ".join(f"{o.topic} judged {contracts.CONTRACTS[o.contract].title(asdict(o))}" for o in app.judged())
    versions = f", {' vs '.join(app.matrix)}" if app.matrix else (
        f", version {app.versions[0]}" if app.versions[0] else "")
    return f"{app.title_or_name} (group {app.group_id}{versions}): {judged or 'no output judged'}"


def matrix(plan: Plan) -> list[str]:
    """The names of the apps a run compares; empty when it judges one."""
    return profile(plan).matrix


def suffix(app: profiles.Profile, name: str, member: str) -> str:
    """What tells one member's copy of a topic from another's (``.<member>``); the input is shared."""
    return f".{member}" if member and profiles.role(name, app) != "input" else ""


def topics(plan: Plan) -> dict[str, int]:
    """The run's topics by role, with their partitions: the input once, every other topic of the app once per
    member."""
    app = profile(plan)
    return {profiles.role(name, app) + suffix(app, name, member): n for name, n in app.names().items()
            for member in app.matrix or [""]}


def app_names(plan: Plan) -> dict[str, str]:
    """``{role: name}`` of the topics whose names a team's app chose (``<name>.<member>`` in a matrix): kept as they
    are where the run owns the cluster, scoped to the run elsewhere. None for the suite's own apps, whose names are
    the run's."""
    app = profile(plan)
    if app.scoped:
        return {}
    return {profiles.role(name, app) + suffix(app, name, m): name + suffix(app, name, m)
            for name in app.names() for m in app.matrix or [""]}


def member_app_id(app_id: str, member: str) -> str:
    """The application id of one member of a matrix."""
    return f"{app_id}-{member}" if member else app_id


def build(plan: Plan, names: dict[str, str]) -> list[Subject]:
    """The subjects of a run whose topics are ``names`` (``{role: topic}``, as provisioned)."""
    app = profile(plan)
    inputs = {i.topic: i.value for i in app.inputs}
    judged = app.judged()

    def subject(member: profiles.AppMember) -> Subject:
        own = {name: names[profiles.role(name, app) + suffix(app, name, member.name)] for name in app.names()}

        def output(o: profiles.Output) -> dict[str, Any]:
            # a member the suite names names its verdict when it judges one output; a team's app's verdicts, and each
            # of several outputs of a member the suite names (the aggregations' counts and sums), by their output
            named = member.label and len(judged) == 1
            name = member.name if named else f"{o.topic}@{member.name}" if member.name else o.topic
            label = f"{member.label}: {o.topic}" if member.label and not named else member.label
            return {**{k: v for k, v in asdict(o).items() if k not in ("topic", "assertions", "executions")},
                    "name": name, "label": label, "output": own[o.topic], "assertions": own.get(o.assertions, ""),
                    "executions": own.get(o.executions, ""), "input_value": inputs[o.of]}

        return Subject(member.name, member_app_id(app.group_id, member.name), member.version, own,
                       [output(o) for o in judged], member.args)

    return [subject(m) for m in app.members]


def app_ids(plan: Plan) -> list[str]:
    """The application ids of a run's subjects."""
    app = profile(plan)
    return [member_app_id(app.group_id, m.name) for m in app.members]


def quoted_app_ids(plan: Plan) -> list[str]:
    """The application ids a quota's ``{app_id}`` names: every subject's but a control's that runs without the run's
    quotas (``quotas: false``)."""
    app = profile(plan)
    return [member_app_id(app.group_id, m.name) for m in app.members if m.quoted]


def client_ids(plan: Plan) -> list[str] | None:
    """The client ids the app's instances connect with, which a quota may name (each instance's ``<app_id>-<n>`` and
    what the app adds to it); None for an app whose clients only its owner knows (a team's)."""
    app = profile(plan)
    if not app.clients:
        return None
    return [f"{group}-{n}{client}" for group in app_ids(plan) for n in range(1, plan["instances"] + 1)
            for client in app.clients]


def stop_leaves_group(plan: Plan) -> bool:
    """Whether an instance the program stops leaves its group at once, or holds its partitions until its session
    times out (Kafka Streams does not leave the group when it closes, and a team's app may well be a Kafka Streams
    app)."""
    return profile(plan).leaves_group


def recorded(cluster: dict[str, Any]) -> list[Subject]:
    """The subjects ``provision`` recorded in the cluster (XCom / ``cluster.json``)."""
    return [Subject(**s) for s in cluster["subjects"]]


def judged(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """What the checker judges (its ``--subjects``): each judged output of each subject, with its contract, named
    by its member (the suite's apps) or by the topic the app knows it by (``<topic>@<member>`` in a matrix), and with
    whose instances ran it (``instances``: its subject's name)."""
    return [{"app_id": s["app_id"], "version": s["version"], "instances": s["name"], **output}
            for s in cluster["subjects"] for output in s["outputs"]]
