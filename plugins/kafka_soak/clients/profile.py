"""An app profile: the one description of a team's own app under test, checked before anything starts.

A team soaks its app unchanged: the profile (param ``app_profile``) says how to start it, which consumer group it
runs as, which topics it needs, what it reads (so the generator writes the app's own format) and what each output
topic must hold after the drain (its contract, which the checker judges). Every input record also carries the
headers ``soak.id`` and ``soak.seq``: Kafka Streams forwards them to what it writes, so an unmodified Kafka Streams
app needs nothing to be judged record by record.

Topic names are the app's own on a cluster the run owns (backends ``local`` and ``docker``); on ``external`` they
are scoped to the run and reach the app through ``{topic:NAME}`` placeholders in its command.

A profile may list ``versions`` of the app (a Kafka Streams release its jar or image is built on, a release of the
team's own): the run then compares them side by side, as it does the reference Kafka Streams app's
(``subjects``): one input for all, and each version its own consumer group (``<group_id>-<version>``), instances and
outputs, judged each on its own. A program that moves instances between versions (``N^V``) runs one app instead, on
the first version, and moves its instances to the others. The command or image takes the version as ``{version}``.

The suite's own apps (the reference worker, its Kafka Streams app, an ``app_command``) run as profiles too
(``clients/reference/profiles.py``): a run knows its app under test only by its profile. What the suite knows of its own apps and
takes as unknown of a team's (its client ids, whether a stop leaves the group, that its topic names are the run's)
are fields a profile's YAML does not have.
"""

from __future__ import annotations

import functools
import json
import re
import string
from dataclasses import asdict, dataclass
from dataclasses import field as default
from typing import Any

from kafka_soak.backends import registry
from kafka_soak.clients import allowed_settings, encodings
from kafka_soak.params import MAX_PARTITIONS
from kafka_soak.shared import contracts, stalls

NOT_JUDGED = "none"  # an output the app writes and the run keeps, not judged
OUTPUT_CONTRACTS = (*(c.name for c in contracts.declarable()), NOT_JUDGED)
# The fields of an output that say how it is judged, each taken by the contracts whose record names it
# (``Contract.fields``) and checked by its own ``FIELD_CHECKS`` entry.
JUDGING_FIELDS = tuple(dict.fromkeys(f for c in contracts.declarable() for f in c.fields))
FUNCTIONS = ("count", "sum", "min", "max", "latest")
OUTPUT_ENCODINGS = ("json", "string", "int32", "int64")
TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")  # Kafka's legal topic names ("." and ".." excepted)
GROUP_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
JSON_PATH = re.compile(r"\$(\.[A-Za-z_][A-Za-z0-9_]*)+")
# Placeholders of a profile's command besides the reference apps' (params.PLACEHOLDERS): the instance's properties
# file, and each of the profile's topics by the name the app knows it by.
PROPERTIES_FILE = "properties_file"
TOPIC = "topic"
VERSION = "version"
STATE_DIR = "state_dir"  # a directory of the instance's own, kept across its restarts (a container's own with Docker)
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
MAX_VERSIONS = 4  # side by side on two cores
MAX_READY = 200
# What the run decides and the properties file carries: a profile's client_properties may not set them.
RUN_PROPERTIES = ("bootstrap.servers", "application.id", "group.id")
FIELDS = {"profile": ("name", "command", "image", "group_id", "client_properties", "topics", "inputs", "outputs",
                     "versions", "stall", "ready"),
          "topic": ("name", "partitions"),
          "input": ("topic", "partitions", "key", "value"),
          "output": ("topic", "partitions", "contract", "of", *JUDGING_FIELDS)}


class ProfileError(ValueError):
    """A profile that cannot run; the message names every field that is wrong and what is allowed."""


@dataclass(frozen=True)
class Input:
    topic: str
    partitions: int
    key: str
    value: dict[str, Any]


@dataclass(frozen=True)
class Output:
    topic: str
    partitions: int
    contract: str
    of: str  # the input topic it is judged against ("" for contract none)
    id_from: str = contracts.ID_FROM_HEADER  # one-to-one: "header" (soak.id) or "json:$.path" in the output value
    function: str = ""  # aggregate: count | sum | min | max | latest
    field: str = ""  # aggregate: the input's field ("" = the decoded input value)
    value: dict[str, Any] = default(default_factory=dict)  # aggregate: how the table's values are decoded
    assertions: str = ""  # id-assignment: the topic of the app's self-check failures (one of the profile's topics)
    executions: str = ""  # workflow (the suite's Kafka Streams app): every committed version of every execution


@dataclass(frozen=True)
class AppMember:
    """One of the apps a run compares side by side (a version of a team's app; a version, workflow design or control
    of the suite's Kafka Streams app): its name in topics, group and instances ("" when the run has one app), the
    version its command's ``{version}`` takes, options only it gets, whether the run's ``{app_id}`` quotas name it,
    and how a verdict names it ("": by the output judged, as a team's app's are)."""

    name: str = ""
    version: str = ""
    args: list[str] = default(default_factory=list)
    quoted: bool = True
    label: str = ""


@dataclass(frozen=True)
class Profile:
    name: str
    command: list[str]
    group_id: str
    client_properties: dict[str, Any]
    topics: dict[str, int]  # other topics the app needs, with their partitions
    inputs: list[Input]
    outputs: list[Output]
    image: str = ""
    members: list[AppMember] = default(default_factory=lambda: [AppMember()])  # profile field versions: one per version
    # How the program can stall a thread of it (``shared/stalls.py``): "jvm" (the suite's Java agent, through
    # JAVA_TOOL_OPTIONS), "contract" (the app keeps the stall protocol itself), "" (it cannot be).
    stall: str = ""
    # Text of the line its log has once an instance got to work ("": Kafka Streams' own RUNNING transition or the
    # reference worker's first assignment, ``health.READY``): what ``wN`` waits for and where the warm-up of anomaly
    # resource_growth begins.
    ready: str = ""
    # What the suite knows of its own apps; a team's app is taken to be unknown on each (not in a profile's YAML).
    scoped: bool = False  # its topic names are the run's (it learns them from the run): scoped to the run everywhere
    leaves_group: bool = False  # a stopped instance leaves its group at once (Kafka Streams holds it to its timeout)
    clients: list[str] = default(default_factory=list)  # its client ids after each instance's <group>-<n> ([]: unknown)
    build: str = ""  # before the run: "streams", the suite's Kafka Streams app built against each version; "worker",
    # the reference worker's virtualenv of each confluent-kafka release
    image_param: str = "app_profile.image"  # what chose its image, and how to get it (runtime docker)
    image_hint: str = "build or load the app's image on the engine"
    title: str = ""  # the run's app in a few words (history, log); "": its name

    @classmethod
    def of(cls, resolved: dict[str, Any]) -> Profile:
        """A profile from its resolved form (``as_dict``: the plan's ``app_profile``), built once in a process for each
        form: a task reads its app's profile from the plan in every module it calls (instances, subjects, the drain, the
        run's size), and each gets the same one."""
        return built(json.dumps(resolved, sort_keys=True))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def input(self) -> Input:
        return self.inputs[0]

    def names(self) -> dict[str, int]:
        """Every topic of the app by the name it knows it, with its partitions."""
        return {**self.topics, **{i.topic: i.partitions for i in self.inputs},
                **{o.topic: o.partitions for o in self.outputs}}

    def judged(self) -> list[Output]:
        return [o for o in self.outputs if o.contract != NOT_JUDGED]

    def image_of(self, version: str) -> str:
        """The container image of one version of the app (runtime docker)."""
        return render(self.image, {VERSION: version}, {})

    @property
    def versions(self) -> list[str]:
        """The versions its members run, each once ("" where the app has none)."""
        return list(dict.fromkeys(m.version for m in self.members))

    @property
    def matrix(self) -> list[str]:
        """The members' names when several run side by side; empty when one app runs (a single version only fills
        ``{version}``)."""
        return [m.name for m in self.members] if len(self.members) > 1 else []

    @property
    def title_or_name(self) -> str:
        return self.title or self.name

    @property
    def takes_properties(self) -> bool:
        """Whether its command reads the properties file the run writes for each start (``{properties_file}``)."""
        return any(name == PROPERTIES_FILE for part in self.command for _text, name, _spec, _conversion
                   in string.Formatter().parse(part))


def role(name: str, profile: Profile) -> str:
    """The run's role of one of the app's topics: ``input`` for what the generator writes (the role every task knows
    the input by); ``topic:<name>`` for the others of a team's app, so that none is taken for a role of the run's, and
    the name itself for the suite's own apps (whose names are the run's)."""
    if name == profile.input.topic:
        return "input"
    return name if profile.scoped else f"{TOPIC}:{name}"


@functools.lru_cache(maxsize=8)
def built(resolved: str) -> Profile:
    """``Profile.of`` a resolved form given as canonical JSON (the key of the profiles a process has built)."""
    given = json.loads(resolved)
    return Profile(**{**given, "inputs": [Input(**i) for i in given["inputs"]],
                      "outputs": [Output(**o) for o in given["outputs"]],
                      "members": [AppMember(**m) for m in given["members"]]})


def members(versions: list[str]) -> list[AppMember]:
    """A team's app's members: one per version compared, or the one app (of its single version, if any)."""
    if len(versions) > 1:
        return [AppMember(v, v) for v in versions]
    return [AppMember("", versions[0] if versions else "")]


def literal(text: str) -> str:
    """``text`` as a command part that ``render`` gives back unchanged (its braces escaped)."""
    return text.replace("{", "{{").replace("}", "}}")


def parse(raw: Any, partitions: int, backend: str, runtime: str, placeholders: tuple[str, ...],
          compared: bool = True) -> Profile:
    """The profile a param value describes, with defaults filled (partitions: the run's ``partitions``), or
    ``ProfileError`` naming each problem (``placeholders``: the run's values an app's command may use). Its
    ``versions`` run side by side (``compared``), or are the versions the program moves the one app's instances
    between (``N^V``), which starts on the first."""
    errors = problems(raw, partitions, backend, runtime, placeholders, compared)
    if errors:
        raise ProfileError("; ".join(errors))
    inputs = [Input(i["topic"], i.get("partitions", partitions), i.get("key", "{key}"), i["value"])
              for i in raw["inputs"]]
    outputs = [Output(o["topic"], o.get("partitions", partitions), o["contract"], o.get("of", ""),
                      **{name: o[name] for name in JUDGING_FIELDS if name in o})
               for o in raw["outputs"]]
    versions = list(raw.get("versions", []))
    return Profile(raw["name"], list(raw.get("command", [])), raw["group_id"], dict(raw.get("client_properties", {})),
                   {t["name"]: t.get("partitions", partitions) for t in raw.get("topics", [])}, inputs, outputs,
                   raw.get("image", ""), members(versions if compared else versions[:1]), raw.get("stall", ""),
                   raw.get("ready", ""))


def problems(raw: Any, partitions: int, backend: str, runtime: str, placeholders: tuple[str, ...],
             compared: bool = True) -> list[str]:
    """Everything wrong with a profile, each naming the field, what was wrong and what is allowed."""
    where = "app_profile"
    if not isinstance(raw, dict):
        return [f"{where}: must be an object with {', '.join(FIELDS['profile'])} (got {type(raw).__name__})"]
    errors = unknown_fields(raw, "profile", where)
    for name in ("name", "group_id"):
        if not isinstance(raw.get(name), str) or not GROUP_ID.fullmatch(raw[name]):
            errors.append(f"{where}.{name}: must be 1-200 of A-Z a-z 0-9 . _ - (got {raw.get(name)!r})")
    command, image = raw.get("command", []), raw.get("image", "")
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        errors.append(f"{where}.command: must be a list of strings (the app's command and its arguments)")
        command = []
    if not isinstance(image, str):
        errors.append(f"{where}.image: must be a string (a container image)")
    elif runtime == "docker" and not image:
        errors.append(f"{where}.image: is missing; runtime docker starts each instance as a container of the app's "
                      "image (command: its arguments)")
    elif runtime != "docker" and image:
        errors.append(f"{where}.image: is for runtime docker (runtime is {runtime!r}); a local process starts from "
                      "command")
    elif not command and not image:
        errors.append(f"{where}.command: is missing; give the command that starts one instance of the app")
    properties = raw.get("client_properties", {})
    if not isinstance(properties, dict) or not all(isinstance(v, (str, int, float, bool)) for v in properties.values()):
        errors.append(f"{where}.client_properties: must be an object of Kafka client properties with string, number "
                      "or boolean values")
    else:
        errors += [f"{where}.client_properties: {name!r} is set by the run (bootstrap.servers from the run's Kafka, "
                   "application.id and group.id from app_profile.group_id)" for name in RUN_PROPERTIES
                   if name in properties]
        errors += allowed_settings.problems(f"{where}.client_properties:", {
            name: value for name, value in properties.items() if name not in RUN_PROPERTIES}, separators=False)
    names: dict[str, str] = {}  # topic -> where it is declared
    inputs = entries(raw, "inputs", where, errors, required=True)
    outputs = entries(raw, "outputs", where, errors, required=True)
    extra = entries(raw, "topics", where, errors, required=False)
    if len(inputs) > 1:
        errors.append(f"{where}.inputs: one input topic per profile for now (got {len(inputs)})")
    for kind, items, key in (("input", inputs, "topic"), ("output", outputs, "topic"), ("topic", extra, "name")):
        plural = "topics" if kind == "topic" else f"{kind}s"
        for n, item in enumerate(items):
            at = f"{where}.{plural}[{n}]"
            errors += unknown_fields(item, kind, at)
            name = item.get(key)
            if not isinstance(name, str) or not TOPIC_NAME.fullmatch(name) or name in (".", ".."):
                errors.append(f"{at}.{key}: {name!r} is no topic name Kafka accepts (1-249 of A-Z a-z 0-9 . _ -, "
                              "not '.' or '..')")
                continue
            if name in names:
                errors.append(f"{at}.{key}: topic {name!r} is declared twice ({names[name]} and {at}); an app's topic "
                              "has one role")
            names[name] = at
            count = item.get("partitions", partitions)
            if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_PARTITIONS:
                errors.append(f"{at}.partitions: must be an integer from 1 to {MAX_PARTITIONS} (got {count!r})")
    values = {i["topic"]: i.get("value") for i in inputs if isinstance(i.get("topic"), str)}
    for n, item in enumerate(inputs):
        at = f"{where}.inputs[{n}]"
        if soak(item.get("value")) and "key" in item:
            errors.append(f"{at}.key: encoding {encodings.SOAK} keys each record as the suite does (key-000042); "
                          "leave key out")
        elif not isinstance(item.get("key", "{key}"), str):
            errors.append(f"{at}.key: must be a string template such as \"customer-{{key}}\"")
        else:
            errors += encodings.key_problems(item.get("key", "{key}"), f"{at}.key")
        if "value" not in item:
            errors.append(f"{at}.value: is missing; e.g. {{encoding: json, template: {{orderId: \"{{id}}\"}}}}")
        else:
            errors += encodings.problems(item["value"], f"{at}.value")
    if outputs and all(item.get("contract") == NOT_JUDGED for item in outputs):
        errors.append(f"{where}.outputs: every output's contract is {NOT_JUDGED}, so the run would judge nothing; give "
                      f"at least one a contract ({', '.join(c.name for c in contracts.declarable())})")
    for n, item in enumerate(outputs):
        errors += output_problems(item, f"{where}.outputs[{n}]", values,
                                  {t.get("name") for t in extra if isinstance(t.get("name"), str)})
    versions = raw.get("versions", [])
    if not isinstance(versions, list):
        versions, errors = [], [*errors, f"{where}.versions: must be a list of version names, e.g. [\"3.8.1\", \"4.3.1\"]"]
    errors += version_problems(versions, command, image if isinstance(image, str) else "", where)
    allowed = (*placeholders, PROPERTIES_FILE, STATE_DIR, *((VERSION,) if versions else ()))
    takes_group = any(name in (PROPERTIES_FILE, "app_id") for part in command
                      if not placeholder_problem(part, allowed, set(names))
                      for _text, name, _spec, _conversion in string.Formatter().parse(part))
    if registry.shared(backend) and runtime != "docker" and not takes_group:  # a container's file is at a fixed path
        errors.append(f"{where}.command: takes neither {{{PROPERTIES_FILE}}} nor {{app_id}}; on backend external the "
                      "app runs as a group of the run's own (<group_id>-<run>: its real group id would join the team's "
                      "app on the shared cluster, and release would delete that group's state), so the app must learn "
                      "its group and application id from its command")
    errors += command_problems(command, set(names), backend, allowed, f"{where}.command",
                               shared=set(values) if compared and len(versions) > 1 else None)
    if raw.get("stall", "") not in ("", *stalls.WAYS):
        errors.append(f"{where}.stall: {raw['stall']!r} is no way to stall the app; allowed: {stalls.JVM!r} (a JVM app: "
                      f"the suite's Java agent stalls its threads), {stalls.CONTRACT!r} (the app keeps the suite's "
                      "stall protocol itself), or leave it out (the program cannot stall it)")
    errors += ready_problems(raw.get("ready", ""), f"{where}.ready")
    return errors


def ready_problems(ready: Any, where: str) -> list[str]:
    """The app's own line that says an instance got to work: text the line contains, not a pattern (a regular
    expression can backtrack over a long log line for as long as it likes; text is found in one pass)."""
    if not isinstance(ready, str) or len(ready) > MAX_READY or not ready.isprintable():
        return [f"{where}: must be the text (at most {MAX_READY} printable characters, one line) of the line the app "
                f"logs once an instance got to work, e.g. \"Started OrdersApp\" (got {ready!r:.80})"]
    return []


def version_problems(versions: Any, command: list[str], image: str, where: str) -> list[str]:
    """The versions a profile compares: distinct names, and each must start a different app (``{version}`` in its
    command or image), else the matrix would run one app several times."""
    at = f"{where}.versions"
    if not isinstance(versions, list) or not all(isinstance(v, str) and VERSION_NAME.fullmatch(v) for v in versions):
        return [f"{at}: must be a list of version names (1-40 of A-Z a-z 0-9 . _ -, starting with a letter or digit), "
                "e.g. [\"3.8.1\", \"4.3.1\"]"]
    if len(set(versions)) != len(versions):
        return [f"{at}: {versions} names a version twice"]
    if len(versions) > MAX_VERSIONS:
        return [f"{at}: at most {MAX_VERSIONS} versions side by side (got {len(versions)})"]
    takes = any(f"{{{VERSION}}}" in part for part in [*command, image])
    if versions and not takes:
        return [f"{at}: the app's command (or image) takes no {{{VERSION}}}, so every version would run the same app; "
                f"put {{{VERSION}}} where it picks its version, e.g. /opt/orders-{{{VERSION}}}.jar"]
    problem = placeholder_problem(image, (VERSION,) if versions else ())
    return [f"{where}.image: {image!r} {problem}; an image takes {{{VERSION}}} only, with versions"] if problem else []


def entries(raw: dict[str, Any], name: str, where: str, errors: list[str], required: bool) -> list[dict[str, Any]]:
    """The objects of one of the profile's lists (problems go to ``errors``)."""
    items = raw.get(name, [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        errors.append(f"{where}.{name}: must be a list of objects")
        return []
    if required and not items:
        errors.append(f"{where}.{name}: must name at least one topic")
    return items


def unknown_fields(item: dict[str, Any], kind: str, where: str) -> list[str]:
    unknown = sorted(set(item) - set(FIELDS[kind]))
    return [f"{where}: unknown fields {unknown}; allowed: {', '.join(FIELDS[kind])}"] if unknown else []


def soak(value: Any) -> bool:
    """Whether an input's value spec is the suite's own records (encoding ``soak``)."""
    return isinstance(value, dict) and value.get("encoding") == encodings.SOAK


def output_problems(item: dict[str, Any], at: str, inputs: dict[str, Any], topics: set[str]) -> list[str]:
    """What is wrong with one output: its contract, the input it is judged against, what of it the contract reads (its
    record: the suite's own records or an app's own format), and the fields the contract takes, each by its check
    (``inputs``: the profile's inputs' value specs by topic; ``topics``: its other topics)."""
    name = item.get("contract")
    if name not in OUTPUT_CONTRACTS:
        return [f"{at}.contract: {name!r} is no contract; allowed: {', '.join(OUTPUT_CONTRACTS)}"]
    if name == NOT_JUDGED:
        extra = sorted(set(item) & {"of", *JUDGING_FIELDS})
        return [f"{at}: {extra} judge an output; contract none is not judged"] if extra else []
    if not isinstance(item.get("of"), str) or item["of"] not in inputs:
        return [f"{at}.of: {item.get('of')!r} is none of the profile's inputs ({', '.join(map(str, inputs))})"]
    contract = contracts.CONTRACTS[name]
    if (contract.reads == contracts.SUITE_RECORDS) != soak(inputs[item["of"]]):
        return [reads_problem(contract, item["of"], at)]
    foreign = [f for f in JUDGING_FIELDS if f in item and f not in contract.fields]
    if foreign:
        return [f"{at}.{f}: is for contract " + " or ".join(c.name for c in contracts.declarable() if f in c.fields)
                for f in foreign]
    return [error for f in contract.fields for error in FIELD_CHECKS[f](item, at, inputs, topics)]


def reads_problem(contract: contracts.Contract, of: str, at: str) -> str:
    """A contract judging records it cannot read: the suite's own records carry their ids in their JSON, an app's own
    format in the soak's headers, which the suite's own records do not have."""
    if contract.reads == contracts.SUITE_RECORDS:
        return (f"{at}.of: contract {contract.name} judges the suite's own records; input {of!r} must have value "
                f"{{encoding: {encodings.SOAK}}}")
    own = ", ".join(c.name for c in contracts.declarable() if c.reads == contracts.SUITE_RECORDS)
    return (f"{at}.contract: {contract.name} judges an app's own format by the soak.id header, which the suite's own "
            f"records (input {of!r}, encoding {encodings.SOAK}) do not carry; judge them with {own}")


def id_from_problems(item: dict[str, Any], at: str, inputs: dict[str, Any], topics: set[str]) -> list[str]:
    """Where an output's id is: the soak.id header, or a number at a JSON path of its value."""
    id_from = item.get("id_from", contracts.ID_FROM_HEADER)
    if id_from == contracts.ID_FROM_HEADER or (isinstance(id_from, str) and id_from.startswith(contracts.ID_FROM_JSON)
                                               and JSON_PATH.fullmatch(id_from[len(contracts.ID_FROM_JSON):])):
        return []
    return [f"{at}.id_from: {id_from!r}; allowed: \"header\" (the soak.id header Kafka Streams forwards) or "
            "\"json:$.path\" (a number in the output's JSON value, e.g. json:$.orderId)"]


def function_problems(item: dict[str, Any], at: str, inputs: dict[str, Any], topics: set[str]) -> list[str]:
    """The function of its key's inputs that a table holds for each key."""
    function = item.get("function")
    return [] if function in FUNCTIONS else [f"{at}.function: {function!r}; allowed: {', '.join(FUNCTIONS)}"]


def field_problems(item: dict[str, Any], at: str, inputs: dict[str, Any], topics: set[str]) -> list[str]:
    """The input's field a function other than count is of: a number in every input record (nothing to say of a
    function that is none: its own check says so)."""
    function, name = item.get("function"), item.get("field", "")
    if not isinstance(name, str):
        return [f"{at}.field: must be a string (a field of the input's value, or a JSON path $.a.b)"]
    if function in FUNCTIONS and function != "count" and not encodings.numeric(inputs[item["of"]], name):
        what = f"field {name!r} of input {item['of']!r}" if name else f"the value of input {item['of']!r}"
        return [f"{at}.field: {function} needs a number, but {what} is not one (a JSON template's field must be a "
                "number or a whole-string number placeholder such as \"{random_int:1:100}\"; int32/int64 values are "
                "numbers)"]
    if function == "count" and name:
        return [f"{at}.field: count counts records; it takes no field"]
    return []


def value_problems(item: dict[str, Any], at: str, inputs: dict[str, Any], topics: set[str]) -> list[str]:
    """How a table's values are decoded: an encoding and, for JSON, the path of the number."""
    value = item.get("value", {})
    encoding = value.get("encoding") if isinstance(value, dict) else None
    if encoding not in OUTPUT_ENCODINGS:
        return [f"{at}.value.encoding: {encoding!r}; allowed: {', '.join(OUTPUT_ENCODINGS)} (how the table's "
                "values are decoded)"]
    if set(value) - {"encoding", "path"} or ("path" in value and encoding != "json"):
        return [f"{at}.value: takes encoding and, with json, path (got {sorted(value)})"]
    if "path" in value and not (isinstance(value["path"], str) and JSON_PATH.fullmatch(value["path"])):
        return [f"{at}.value.path: {value['path']!r} is no JSON path such as $.total"]
    return []


def assertions_problems(item: dict[str, Any], at: str, inputs: dict[str, Any], topics: set[str]) -> list[str]:
    """The topic an app written for the suite's contract writes its self-check failures to: one of the profile's."""
    if isinstance(item.get("assertions"), str) and item["assertions"] in topics:
        return []
    return [f"{at}.assertions: {item.get('assertions')!r} is none of the profile's topics "
            f"({', '.join(sorted(map(str, topics))) or 'none'}); name the topic the app writes its self-check "
            "failures to (it may stay empty) and list it under topics"]


# The check of each field a contract takes (``JUDGING_FIELDS``), given the output, where it is, the profile's inputs'
# value specs by topic and its other topics.
FIELD_CHECKS = {"id_from": id_from_problems, "function": function_problems, "field": field_problems,
                "value": value_problems, "assertions": assertions_problems}


# The checker computes a table's expected values as decimal(38, 9): 29 digits before the point.
DECIMAL_MAX = 10**29 - 1


def aggregate_reach_problems(app: Profile, records: int, keys: int) -> list[str]:
    """A table whose right values the checker or the table itself cannot hold: a count or a sum over a key's records
    (``records`` over ``keys``: the most a key gets) past the checker's decimal(38, 9), or past the table's own int32 or
    int64 values; every key of it would be judged wrong."""
    inputs = {i.topic: i.value for i in app.inputs}
    per_key = -(-records // keys)
    errors = []
    for n, out in enumerate(app.outputs):
        if not out.function:  # a table's: a function of each key's inputs
            continue
        one = 1 if out.function == "count" else encodings.largest(inputs[out.of], out.field, records, keys)
        reach = one * per_key if out.function in ("count", "sum") else one
        encoding = out.value.get("encoding", "")
        holds = {"the checker's decimal(38, 9)": DECIMAL_MAX,
                 **({f"the table's {encoding} values": encodings.INTEGERS[encoding][1]}
                    if encoding in encodings.INTEGERS else {})}
        errors += [f"app_profile.outputs[{n}]: its {out.function} over a key's {per_key} records can reach {reach:.3g}, "
                   f"more than {what} can hold ({most:.3g}): lower records per key (records / keys) or the input's "
                   f"{out.field or 'value'}" for what, most in holds.items() if reach > most]
    return errors


def command_problems(command: list[str], topics: set[str], backend: str, allowed: tuple[str, ...],
                     at: str, shared: set[str] | None = None) -> list[str]:
    """A profile's command may use the ``allowed`` placeholders and ``{topic:NAME}`` of its own topics; on a cluster
    the run does not own (``external``) every topic must reach it that way, and so must, in a version matrix (given its
    ``shared`` inputs), every other topic (each version writes its own)."""
    errors = [f"{at}: {part!r} {problem}; allowed: " + ", ".join(f"{{{p}}}" for p in allowed)
              + ", {topic:NAME} of the profile's topics, without format spec or conversion (write {{ and }} for braces)"
              for part in command if (problem := placeholder_problem(part, allowed, topics))]
    named = {spec for part in command if not placeholder_problem(part, allowed, topics)
             for _text, name, spec, _conversion in string.Formatter().parse(part) if name == TOPIC}
    fixed = sorted(topics - named)
    if registry.shared(backend) and fixed:
        errors.append(f"{at}: takes no {{topic:NAME}} for {fixed}; on backend external the run's topics are scoped to "
                      "the run (soak.<dag>.<run>.<name>), so the app must learn each name from its command. An app "
                      "whose topic names are fixed in its code runs where the run owns the cluster (backend local or "
                      "docker)")
    elif shared is not None and (own := sorted(set(fixed) - shared)):
        errors.append(f"{at}: takes no {{topic:NAME}} for {own}; in a version matrix each version writes topics of "
                      "its own (<name>.<version>), so the app must learn their names from its command")
    return errors


def placeholder_problem(part: str, allowed: tuple[str, ...], topics: set[str] = frozenset()) -> str:
    """What is wrong with the placeholders of one part of an app's command ("" if nothing): only the ``allowed`` bare
    names and, in a profile's, ``{topic:NAME}`` of its ``topics``; so no attribute or item access, and no format spec
    that pads a value to gigabytes."""
    try:
        fields = list(string.Formatter().parse(part))
    except ValueError as exc:
        return f"has a bad placeholder ({exc})"
    for _text, name, spec, conversion in fields:
        if name is None:
            continue
        if topics and name == TOPIC and not conversion:
            if spec not in topics:
                return f"has {{topic:{spec}}}, which names no topic of the profile ({', '.join(sorted(topics))})"
            continue
        if name not in allowed:
            return f"has an unknown placeholder {{{name}}}"
        if spec or conversion:
            return f"formats placeholder {{{name}}} ({'!' + conversion if conversion else ''}{':' + spec if spec else ''})"
    return ""


def render(part: str, values: dict[str, str], topics: dict[str, str]) -> str:
    """One part of the command with its placeholders filled: ``values`` by name, ``{topic:NAME}`` from ``topics``."""
    out = []
    for text, name, spec, _conversion in string.Formatter().parse(part):
        out.append(text)
        if name is not None:
            out.append(topics[spec] if name == TOPIC else values[name])
    return "".join(out)
