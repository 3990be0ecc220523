"""A team's app profile (param ``app_profile``): resolved into the run's plan, topics and judged outputs, or refused
before anything starts with the field, what was wrong and what is allowed."""

from __future__ import annotations

import copy
import functools

import pytest
from support.outside_apps import contract_app_profile

from kafka_soak import run_plan
from kafka_soak.clients import subjects
from kafka_soak.clients.instances import Instances
from kafka_soak.infra.cluster import Cluster, topic_names
from kafka_soak.plan import ParamsError

ORDERS = {"topic": "orders", "partitions": 6, "key": "customer-{key}",
          "value": {"encoding": "json", "template": {"orderId": "{id}", "customer": "customer-{key}",
                                                     "amount": "{random_int:1:100}", "seq": "{seq}"}}}
PROFILE = {
    "name": "orders-enricher", "group_id": "orders-enricher",
    "command": ["java", "-jar", "/opt/orders.jar", "--config", "{properties_file}", "--in", "{topic:orders}",
                "--out", "{topic:orders-enriched}", "--count", "{topic:orders-count}"],
    "client_properties": {"processing.guarantee": "exactly_once_v2", "commit.interval.ms": 100, "enable.idempotence": True},
    "topics": [{"name": "orders-by-customer", "partitions": 2}],
    "inputs": [ORDERS],
    "outputs": [{"topic": "orders-enriched", "contract": "one-to-one", "of": "orders"},
                {"topic": "orders-count", "contract": "aggregate", "of": "orders", "function": "count",
                 "value": {"encoding": "int64"}},
                {"topic": "orders-total", "contract": "aggregate", "of": "orders", "function": "sum", "field": "amount",
                 "value": {"encoding": "json", "path": "$.total"}},
                {"topic": "orders-audit", "contract": "none"}],
}


def contract_app(**fields: object) -> dict:
    """An app written for the suite's own contract (``outside_apps.contract_app_profile``) with some ``fields``
    replaced."""
    return {**contract_app_profile(), **fields}


def changed(*path: str | int, to: object) -> dict:
    """The profile above with the field at ``path`` (``"outputs", 0, "contract"``) set ``to`` a value."""
    profile = copy.deepcopy(PROFILE)
    node = profile
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = to
    return profile


def test_a_profile_resolves_into_the_plan_its_topics_and_the_outputs_the_checker_judges(tmp_path):
    plan = run_plan.check({"app_profile": PROFILE, "partitions": 4})
    app = plan["app_profile"]
    assert [o["partitions"] for o in app["outputs"]] == [4, 4, 4, 4] and app["inputs"][0]["partitions"] == 6
    assert app["topics"] == {"orders-by-customer": 2}
    assert app["ready"] == "" and subjects.profile(run_plan.check(
        {"app_profile": {**PROFILE, "ready": "Started OrdersApp"}})).ready == "Started OrdersApp"
    assert subjects.client_ids(plan) is None and not subjects.stop_leaves_group(plan)
    roles = subjects.topics(plan)
    assert roles == {"topic:orders-by-customer": 2, "input": 6, "topic:orders-enriched": 4, "topic:orders-count": 4,
                     "topic:orders-total": 4, "topic:orders-audit": 4}
    # the app's own names where the run owns the cluster, scoped to the run on a shared one
    owned = topic_names(roles, "soak.d.r", subjects.app_names(plan), owned=True)
    shared = topic_names(roles, "soak.d.r", subjects.app_names(plan), owned=False)
    assert owned["input"] == "orders" and owned["topic:orders-count"] == "orders-count"
    assert shared["input"] == "soak.d.r.orders" and shared["topic:orders-count"] == "soak.d.r.orders-count"
    assert topic_names(["input"], "soak.d.r", {}, owned=True) == {"input": "soak.d.r.input"}
    [subject] = subjects.build(plan, shared)
    assert subject.app_id == "orders-enricher"
    cluster = {"backend": "external", "bootstrap_servers": "127.0.0.1:1", "topics": shared,
               "subjects": [subject.as_dict()]}
    judged = subjects.judged(cluster)
    assert [(j["name"], j["output"], j["contract"]) for j in judged] == [
        ("orders-enriched", "soak.d.r.orders-enriched", "one-to-one"),
        ("orders-count", "soak.d.r.orders-count", "aggregate"),
        ("orders-total", "soak.d.r.orders-total", "aggregate")]
    assert judged[2]["function"] == "sum" and judged[2]["field"] == "amount"
    assert judged[2]["input_value"] == ORDERS["value"] and judged[0]["id_from"] == "header"
    # the command gets the run's names and a properties file of this start; the file has what the run decides last
    secured = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "sasl.username": "u", "sasl.password": "p"}
    instances = Instances(tmp_path, Cluster(**cluster), plan, [subject], secured)
    command = instances.command(subject, 2, 5, tmp_path / "p.properties")
    assert command[4:] == [str(tmp_path / "p.properties"), "--in", "soak.d.r.orders", "--out",
                           "soak.d.r.orders-enriched", "--count", "soak.d.r.orders-count"]
    lines = dict(line.split("=", 1) for line in instances.properties(subject, 2).splitlines())
    assert lines["application.id"] == lines["group.id"] == "orders-enricher"
    assert lines["client.id"] == "orders-enricher-2" and lines["commit.interval.ms"] == "100"
    assert lines["enable.idempotence"] == "true" and lines["processing.guarantee"] == "exactly_once_v2"
    assert lines["bootstrap.servers"] == "127.0.0.1:1" and lines["security.protocol"] == "SASL_SSL"
    assert "sasl.jaas.config" in lines and lines["state.dir"] == str(tmp_path / "state" / "instance-2")
    # a start's private directory holds its properties file and is where its temporary files go, a JVM's too (RocksDB
    # extracts its native library there); one whose supervisor was killed (SIGKILL: it could not remove it) goes once
    # no instance runs
    private = instances.private_dir(subject, 2)
    left = instances.write_properties(subject, 2, private)
    assert private.name.startswith(f"soak-{tmp_path.name}-") and len(private.name) < 255
    assert oct(private.stat().st_mode & 0o777) == "0o700" and oct(left.stat().st_mode & 0o777) == "0o600"
    env = instances.environment(subject, 2, 5, private)
    assert env["TMPDIR"] == str(private) and f"-Djava.io.tmpdir={private}" in env["JAVA_TOOL_OPTIONS"].split()
    assert instances.stop_all() == {} and not private.exists()


def test_a_profile_with_versions_runs_each_version_side_by_side_on_one_input(tmp_path):
    """Each version its own group, instances and outputs (the app learns their names from its command), judged each
    on its own with its own instances' health; the input is written once for all."""
    versioned = changed("command", to=["java", "-jar", "/opt/orders-{version}.jar", "{properties_file}",
                                       "{topic:orders}", "{topic:orders-enriched}", "{topic:orders-count}",
                                       "{topic:orders-total}", "{topic:orders-audit}", "{topic:orders-by-customer}"])
    versioned["versions"] = ["3.8.1", "4.3.1"]
    plan = run_plan.check({"app_profile": versioned, "quotas": [{"client_id": "{app_id}-1", "producer_byte_rate": 1024}]
                         }, app_id="dag-app")
    assert subjects.matrix(plan) == ["3.8.1", "4.3.1"] and subjects.profile(plan).versions == ["3.8.1", "4.3.1"]
    assert [q["client_id"] for q in plan["quotas"]] == ["orders-enricher-3.8.1-1", "orders-enricher-4.3.1-1"]
    roles = subjects.topics(plan)
    assert roles["input"] == 6 and "topic:orders-count.3.8.1" in roles and "topic:orders-count.4.3.1" in roles
    assert len(roles) == 1 + 2 * 5
    names = topic_names(roles, "soak.d.r", subjects.app_names(plan), owned=True)
    assert names["input"] == "orders" and names["topic:orders-enriched.4.3.1"] == "orders-enriched.4.3.1"
    old, new = subjects.build(plan, names)
    assert (old.name, old.app_id, old.version) == ("3.8.1", "orders-enricher-3.8.1", "3.8.1")
    assert new.app_id == "orders-enricher-4.3.1" and new.process(2) == "instance-2@4.3.1"
    cluster = {"backend": "local", "bootstrap_servers": "127.0.0.1:1", "topics": names,
               "subjects": [old.as_dict(), new.as_dict()]}
    judged = subjects.judged(cluster)
    assert [(j["name"], j["output"], j["instances"]) for j in judged] == [
        ("orders-enriched@3.8.1", "orders-enriched.3.8.1", "3.8.1"),
        ("orders-count@3.8.1", "orders-count.3.8.1", "3.8.1"),
        ("orders-total@3.8.1", "orders-total.3.8.1", "3.8.1"),
        ("orders-enriched@4.3.1", "orders-enriched.4.3.1", "4.3.1"),
        ("orders-count@4.3.1", "orders-count.4.3.1", "4.3.1"),
        ("orders-total@4.3.1", "orders-total.4.3.1", "4.3.1")]
    instances = Instances(tmp_path, Cluster(**cluster), plan, [old, new])
    assert instances.command(new, 1, 0, tmp_path / "p")[2:] == [
        "/opt/orders-4.3.1.jar", str(tmp_path / "p"), "orders", "orders-enriched.4.3.1", "orders-count.4.3.1",
        "orders-total.4.3.1", "orders-audit.4.3.1", "orders-by-customer.4.3.1"]
    lines = dict(line.split("=", 1) for line in instances.properties(old, 1).splitlines())
    assert lines["application.id"] == "orders-enricher-3.8.1" and lines["client.id"] == "orders-enricher-3.8.1-1"
    assert lines["state.dir"] == str(tmp_path / "state" / "instance-1@3.8.1")
    # in containers, each version's own image
    from kafka_soak import preflight

    boxed = run_plan.check({"runtime": "docker", "app_profile": {**versioned, "image": "team/orders:{version}",
                                                               "command": versioned["command"][3:]}})
    assert [image for image, _param, _how in preflight.app_images(boxed)] == ["team/orders:3.8.1", "team/orders:4.3.1"]
    # a single version fills {version} and runs one app, under the profile's own group
    single = run_plan.check({"app_profile": {**versioned, "versions": ["4.3.1"]}})
    [only] = subjects.build(single, topic_names(subjects.topics(single), "p", subjects.app_names(single), owned=True))
    assert (only.name, only.app_id, only.version) == ("", "orders-enricher", "4.3.1")
    assert subjects.judged({"subjects": [only.as_dict()]})[0]["name"] == "orders-enriched"


def test_the_suites_own_apps_are_profiles_whose_facts_the_run_asks_instead_of_which_app_it_is(tmp_path):
    """No app_profile: the plan carries the profile of the reference worker, the Kafka Streams app or an app_command,
    and provision, the instances, the drain and the quota check take everything they need from it."""
    worker = run_plan.check({"instances": 2, "bug": "drop", "bug_every": 7, "seed": 11}, app_id="w-app")
    app = subjects.profile(worker)
    assert (app.name, app.group_id, app.scoped, app.build) == ("worker", "w-app", True, "")
    assert subjects.stop_leaves_group(worker) and subjects.matrix(worker) == []
    assert subjects.client_ids(worker) == ["w-app-1", "w-app-1-producer", "w-app-2", "w-app-2-producer"]
    roles = subjects.topics(worker)
    assert roles == {"changelog": 4, "assertions": 1, "input": 4, "output": 4} and subjects.app_names(worker) == {}
    names = topic_names(roles, "soak.d.r", subjects.app_names(worker), owned=True)
    assert names["output"] == "soak.d.r.output", "the suite's apps' names are the run's, scoped to it everywhere"
    [subject] = subjects.build(worker, names)
    cluster = Cluster("local", "127.0.0.1:9", names, subjects=[subject.as_dict()])
    command = Instances(tmp_path, cluster, worker, [subject]).command(subject, 2, 3)
    assert command[1:3] == ["-m", "kafka_soak.clients.reference.worker"] and not app.takes_properties
    flags = dict(zip(command[3::2], command[4::2], strict=True))
    assert (flags["--app-id"], flags["--instance"], flags["--step"], flags["--bug"], flags["--bug-every"]) == \
        ("w-app", "2", "3", "drop", "7")
    assert (flags["--output-topic"], flags["--changelog-topic"], flags["--assertions-topic"]) == \
        ("soak.d.r.output", "soak.d.r.changelog", "soak.d.r.assertions")
    [judged] = subjects.judged(cluster.as_dict())
    assert (judged["name"], judged["label"], judged["contract"], judged["assertions"]) == \
        ("", "the app", "id-assignment", "soak.d.r.assertions")
    streams = run_plan.check({"app": "streams", "streams_versions": ["3.8.1", "4.3.1"], "threads": 2})
    app = subjects.profile(streams)
    assert (app.build, app.versions, subjects.matrix(streams)) == ("streams", ["3.8.1", "4.3.1"], ["3.8.1", "4.3.1"])
    assert not subjects.stop_leaves_group(streams), "Kafka Streams holds its partitions after a close"
    assert "app-4.3.1-3-StreamThread-2-restore-consumer" in subjects.client_ids(streams)
    command = run_plan.check({"app_command": ["my-app", "--out", "{output_topic}"]})
    assert (subjects.profile(command).command, subjects.stop_leaves_group(command)) == \
        (["my-app", "--out", "{output_topic}"], True)


def test_a_teams_versions_are_its_own_and_not_built_as_kafka_streams_releases():
    """Preflight builds the suite's Kafka Streams app for a run of it, never for a team's app: a profile's versions
    are the team's names (they once reached Maven as Kafka Streams releases and refused the run)."""
    from kafka_soak import preflight

    versioned = changed("command", to=["/opt/orders-{version}/bin/run", "{properties_file}", "{topic:orders}",
                                       "{topic:orders-enriched}", "{topic:orders-count}", "{topic:orders-total}",
                                       "{topic:orders-audit}", "{topic:orders-by-customer}"])
    plan = run_plan.check({"app_profile": {**versioned, "versions": ["blue", "green"]}})
    assert subjects.profile(plan).build == "" and subjects.matrix(plan) == ["blue", "green"]
    preflight.check(plan)  # no StreamsVersionError: nothing to build


@pytest.mark.parametrize("profile, backend, fragment", [
    ({**PROFILE, "versions": ["3.8.1", "4.3.1"]}, "local",
     "app_profile.versions: the app's command (or image) takes no {version}, so every version would run the same app"),
    ({**changed("command", to=["app-{version}"]), "versions": ["1", "1"]}, "local",
     "app_profile.versions: ['1', '1'] names a version twice"),
    ({**changed("command", to=["app-{version}"]), "versions": ["1", "2", "3", "4", "5"]}, "local",
     "app_profile.versions: at most 4 versions side by side (got 5)"),
    ({**changed("command", to=["app-{version}"]), "versions": ["-rc"]}, "local",
     "app_profile.versions: must be a list of version names"),
    ({**changed("command", to=["app-{version}", "{topic:orders-count}"]), "versions": ["1", "2"]}, "local",
     "app_profile.command: takes no {topic:NAME} for ['orders-audit', 'orders-by-customer', 'orders-enriched', "
     "'orders-total']; in a version matrix each version writes topics of its own"),
    (changed("command", to=["app-{version}"]), "local",
     "app_profile.command: 'app-{version}' has an unknown placeholder {version}"),

    (changed("outputs", 0, "contract", to="exactly-once"), "local",
     "app_profile.outputs[0].contract: 'exactly-once' is no contract; allowed: one-to-one, aggregate, id-assignment, "
     "none"),
    (changed("outputs", 0, "contract", to="id-assignment"), "local",
     "app_profile.outputs[0].of: contract id-assignment judges the suite's own records; input 'orders' must have value "
     "{encoding: soak}"),
    (changed("outputs", 0, "assertions", to="orders-by-customer"), "local",
     "app_profile.outputs[0].assertions: is for contract id-assignment"),
    (contract_app(inputs=[{"topic": "events", "key": "k-{key}", "value": {"encoding": "soak"}}]), "local",
     "app_profile.inputs[0].key: encoding soak keys each record as the suite does (key-000042); leave key out"),
    (contract_app(inputs=[{"topic": "events", "value": {"encoding": "soak", "template": {"id": "{id}"}}}]), "local",
     "app_profile.inputs[0].value: ['template'] are not fields of encoding soak; it takes none"),
    (contract_app(outputs=[{"topic": "event-ids", "contract": "id-assignment", "of": "events"}]), "local",
     "app_profile.outputs[0].assertions: None is none of the profile's topics (ids-changelog, self-check); name the "
     "topic the app writes its self-check failures to"),
    (contract_app(outputs=[{"topic": "event-ids", "contract": "one-to-one", "of": "events"}]), "local",
     "app_profile.outputs[0].contract: one-to-one judges an app's own format by the soak.id header, which the suite's "
     "own records (input 'events', encoding soak) do not carry; judge them with id-assignment"),
    (changed("outputs", 1, "of", to="payments"), "local",
     "app_profile.outputs[1].of: 'payments' is none of the profile's inputs (orders)"),
    (changed("outputs", 2, "field", to="customer"), "local",
     "app_profile.outputs[2].field: sum needs a number, but field 'customer' of input 'orders' is not one"),
    (changed("outputs", 1, "function", to="median"), "local",
     "app_profile.outputs[1].function: 'median'; allowed: count, sum, min, max, latest"),
    (changed("outputs", 1, "value", to={"encoding": "avro"}), "local",
     "app_profile.outputs[1].value.encoding: 'avro'; allowed: json, string, int32, int64"),
    (changed("outputs", 0, "id_from", to="json:orderId"), "local",
     "app_profile.outputs[0].id_from: 'json:orderId'; allowed: \"header\""),
    (changed("outputs", 3, "topic", to="orders/audit"), "local",
     "app_profile.outputs[3].topic: 'orders/audit' is no topic name Kafka accepts"),
    (changed("outputs", 3, "topic", to="orders-count"), "local",
     "app_profile.outputs[3].topic: topic 'orders-count' is declared twice (app_profile.outputs[1] and "
     "app_profile.outputs[3])"),
    (changed("outputs", 0, "partitions", to=0), "local", "app_profile.outputs[0].partitions: must be an integer from 1"),
    (changed("command", to=["app", "{topic:payments}"]), "local",
     "app_profile.command: '{topic:payments}' has {topic:payments}, which names no topic of the profile"),
    (changed("command", to=["app", "{secret_key}"]), "local",
     "app_profile.command: '{secret_key}' has an unknown placeholder {secret_key}; allowed: {bootstrap_servers}"),
    (changed("command", to=["app", "{properties_file}"]), "external",
     "app_profile.command: takes no {topic:NAME} for ['orders', 'orders-audit', 'orders-by-customer', "
     "'orders-count', 'orders-enriched', 'orders-total']; on backend external"),
    (changed("client_properties", to={"bootstrap.servers": "evil:9092"}), "local",
     "app_profile.client_properties: 'bootstrap.servers' is set by the run"),
    (changed("group_id", to="orders enricher"), "local", "app_profile.group_id: must be 1-200 of A-Z a-z 0-9 . _ -"),
    (changed("colour", to="red"), "local", "app_profile: unknown fields ['colour']; allowed: name, command"),
    (changed("inputs", to=[]), "local", "app_profile.inputs: must name at least one topic"),
    (changed("command", to=[]), "local", "app_profile.command: is missing"),
    (changed("image", to="orders:1.4"), "local", "app_profile.image: is for runtime docker (runtime is 'local')"),
    (changed("ready", to="Started\nOrdersApp"), "local",
     "app_profile.ready: must be the text (at most 200 printable characters, one line) of the line the app logs once an "
     "instance got to work"),
])
def test_a_bad_profile_is_refused_naming_the_field(profile, backend, fragment):
    with pytest.raises(ParamsError) as err:
        run_plan.check({"app_profile": profile, "backend": backend})
    assert fragment in str(err.value)


def test_the_profile_check_takes_each_contract_from_its_record():
    """A contract's fields are the ones a profile's output may give it, each with a check of its own; a field of
    another contract is refused naming the contract it is for."""
    from kafka_soak.clients import profile as profiles

    assert set(profiles.FIELD_CHECKS) == set(profiles.JUDGING_FIELDS)
    with pytest.raises(ParamsError, match=r"outputs\[1\]\.id_from: is for contract one-to-one"):
        run_plan.check({"app_profile": changed("outputs", 1, "id_from", to="header")})


@pytest.mark.parametrize("conf, fragment", [
    ({"app_command": ["my-app"]}, "app_command: the app_profile's command starts the app under test"),
    ({"bug": "drop"}, "bug: is a setting of the reference apps (got 'drop'); a profile's app takes its settings from "
                      "app_profile.client_properties"),
    ({"standbys": 1}, "standbys: is a setting of the reference apps"),
    ({"runtime": "docker"}, "app_profile.image: is missing; runtime docker starts each instance as a container"),
])
def test_a_profile_takes_no_other_app_and_no_setting_of_the_reference_apps(conf, fragment):
    with pytest.raises(ParamsError) as err:
        run_plan.check({"app_profile": PROFILE, **conf})
    assert fragment in str(err.value)


FUZZ_PROFILES = [
    {"name": "a", "group_id": "a", "client_properties": {"linger.ms": 5}, "versions": ["1.0", "2.0"], "ready": "up",
     "command": ["app", "{properties_file}", "{version}", "{topic:in}", "{topic:out}", "{topic:agg}", "{topic:t}"],
     "topics": [{"name": "t", "partitions": 2}],
     "inputs": [{"topic": "in", "key": "k-{key}", "value": {"encoding": "json", "template": {"id": "{id}",
                                                                                          "p": "{payload}"}}}],
     "outputs": [{"topic": "out", "contract": "one-to-one", "of": "in"},
                 {"topic": "agg", "contract": "aggregate", "of": "in", "function": "count",
                  "value": {"encoding": "int64"}}]},
    {"name": "a", "group_id": "a", "command": ["app", "{properties_file}", "{topic:a}"],
     "topics": [{"name": "a", "partitions": 1}], "inputs": [{"topic": "in", "value": {"encoding": "soak"}}],
     "outputs": [{"topic": "out", "contract": "id-assignment", "of": "in", "assertions": "a"}]},
]
WRONG_VALUES = [None, [], {}, ["x"], {"a": 1}, 1, 1.5, True, "", "x" * 300, [{"x": 1}], [None]]


def places(value, at=()):
    """Every place in a profile, as a path of keys and indexes."""
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from places(item, (*at, key))


@pytest.mark.parametrize("base", range(len(FUZZ_PROFILES)))
def test_a_wrong_value_anywhere_in_a_profile_is_refused_by_name_never_raised(base):
    """Each place of two valid profiles set to each of a dozen wrong values, on a cluster the run owns and a shared
    one: a ParamsError naming app_profile every time, never a TypeError (which once lost every DAG of the folder)."""
    assert run_plan.check({"app_profile": FUZZ_PROFILES[base]})["app_profile"]["name"] == "a"
    tried = 0
    for at in [p for p in places(FUZZ_PROFILES[base]) if p]:
        for wrong in WRONG_VALUES:
            profile = copy.deepcopy(FUZZ_PROFILES[base])
            parent = functools.reduce(lambda value, key: value[key], at[:-1], profile)
            parent[at[-1]] = wrong
            for backend in ("local", "external"):
                try:
                    run_plan.check({"app_profile": profile, "backend": backend})
                except ParamsError as exc:
                    assert "app_profile" in str(exc) or "records" in str(exc), (at, wrong, str(exc))
                tried += 1
    assert tried > 400


def test_a_task_builds_its_app_s_profile_once_from_the_plan():
    """Every module a task calls reads the app's profile from the plan (subjects, instances, the drain, the run's
    size): a process builds it once for each form and every reader gets that one, as it was resolved."""
    from kafka_soak.clients import profile as profiles

    plan = run_plan.check({"app_profile": PROFILE})
    assert subjects.profile(plan) is subjects.profile(copy.deepcopy(plan)) is profiles.Profile.of(plan["app_profile"])
    assert subjects.profile(plan).as_dict() == plan["app_profile"]
    assert subjects.profile(run_plan.check({})) is not subjects.profile(plan)
