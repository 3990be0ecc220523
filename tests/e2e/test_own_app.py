"""A team's own app, unchanged, soaked end to end from its profile (param ``app_profile``): the apps of
``tests/apps/`` know nothing of the suite (their own topic names, JSON and serdes, settings from a properties file)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from support.checks import leaked_secret
from support.outside_apps import ORDERS, ORDERS_PY_READY, contract_app_profile, orders_py_profile, orders_streams_command
from support.soak_runs import CHURN_AND_KILL, alerts, soak

# A Kafka Streams app with its own JSON and serdes: every order enriched (Kafka Streams forwards the input's headers, so
# the soak.id header identifies each output), and per customer a count table (8-byte longs) and a total table (JSON).
STREAMS_OUTPUTS = [
    {"topic": "orders-enriched", "contract": "one-to-one", "of": "orders"},
    {"topic": "orders-count", "contract": "aggregate", "of": "orders", "function": "count",
     "value": {"encoding": "int64"}},
    {"topic": "orders-total", "contract": "aggregate", "of": "orders", "function": "sum", "field": "amount",
     "value": {"encoding": "json", "path": "$.total"}},
]


VERSIONS = ("3.4.0", "4.3.1")  # Kafka Streams releases the app is built on for a version matrix


def streams_app(*faults: str, versions: tuple[str, ...] = ()) -> dict:
    """The Kafka Streams app's profile, with planted ``faults`` (``drop``: order 77 never enriched; ``double-count``:
    order 77 counted twice), built on each Kafka Streams release of ``versions`` side by side."""
    return {"name": "orders-streams", "group_id": "orders-streams",
            "command": orders_streams_command(*faults, versions=versions), "versions": list(versions),
            # a 6 s session: a Kafka Streams instance that closes or dies keeps its tasks for a session. A 60 s
            # transaction timeout (Kafka Streams' own under exactly-once is 10 s): a broker down for a step of 8 s and
            # its restart (up to 5 s on a busy machine) must not outlive it, or the coordinator that took over aborts
            # a commit held meanwhile, which a 4.3.1 broker answers as KAFKA-20785 (a stream thread dead of
            # InvalidTxnStateException, seen once in a `make test`)
            "client_properties": {"processing.guarantee": "exactly_once_v2", "session.timeout.ms": 6000,
                                  "producer.transaction.timeout.ms": 60000},
            "inputs": [ORDERS], "outputs": STREAMS_OUTPUTS}


def private_files(run_dir: Path) -> list[Path]:
    """The private directories of a run's instances still on disk (their properties files and temporary files; each
    is removed when its instance ends); named after the run, so another test's live instances are not counted."""
    return list(Path(tempfile.gettempdir()).glob(f"soak-{run_dir.name}-*"))


def test_a_python_transactional_app_passes_churn_and_kill_judged_by_the_id_in_its_output_value(runs_dir):
    """Started from its profile's command with its own topic names and a properties file per start; the generator
    writes its JSON orders; the drain follows its group; the checker finds every order exactly once by the id the app
    keeps in its value (``id_from``), through a graceful stop, a kill -9 and a restart."""
    code, run_dir, verdict = soak(runs_dir, app_profile=orders_py_profile(), **CHURN_AND_KILL)
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed" and set(verdict["anomalies"].values()) == {0}, verdict
    assert verdict["records"]["input"] == verdict["records"]["output"] == CHURN_AND_KILL["records"]
    assert verdict["label"] == "orders-enriched (one-to-one)"
    cluster = json.loads((run_dir / "cluster.json").read_text())
    assert cluster["topics"] == {"input": "orders", "topic:orders-enriched": "orders-enriched"}
    logs = {p.name: p.read_text() for p in (run_dir / "logs").glob("orders-py-*.log")}
    assert set(logs) == {"orders-py-1.0.log", "orders-py-2.1.log", "orders-py-1.4.log"}
    assert "orders-enricher orders-py-1: orders -> orders-enriched" in logs["orders-py-1.4.log"]
    assert not private_files(run_dir), "every instance's private directory is removed when the instance ends"
    steps = [json.loads(line) for line in (run_dir / "program.jsonl").read_text().splitlines()]
    assert [s["token"] for s in steps] == ["1", "2", "w1", "k1", "1"] and steps[3]["running_after"] == [2]
    # w1 waited for the line the profile names (app_profile.ready), which the first life logged before its kill; the
    # resource warm-up of that life starts there too
    first = [e for e in map(json.loads, (run_dir / "events.jsonl").read_text().splitlines())
             if e["event"] == "start" and e["log"] == "orders-py-1.0.log"][0]
    ready = json.loads((run_dir / "health.json").read_text())["ready"]
    assert ORDERS_PY_READY in logs["orders-py-1.0.log"] and str(first["pid"]) in ready


def test_an_app_written_for_the_suites_own_contract_is_judged_by_it_through_its_profile(runs_dir):
    """A team's app that reads the suite's own records and keeps its id-assignment contract (the reference worker,
    dropping every 1000th id) is described by a profile like any other: its own topic names, reached through the
    command's placeholders; the generator writes the suite's records to its input, and the checker judges its output
    by that contract, self-check topic included, through a graceful stop, a kill -9 and a restart: exactly the six
    dropped ids are lost, nothing else is wrong."""
    profile = contract_app_profile("--bug", "drop", "--bug-every", "1000")
    code, run_dir, verdict = soak(runs_dir, app_profile=profile, **CHURN_AND_KILL)
    assert code == 1 and verdict is not None and verdict["status"] == "failed", verdict
    assert {k: v for k, v in verdict["anomalies"].items() if v} == {"lost": 6}, verdict
    assert sorted(s["id"] for s in verdict["samples"]["lost"]) == [1000, 2000, 3000, 4000, 5000, 6000]
    assert verdict["label"] == "event-ids (id-assignment)" and verdict["contract"] == "id-assignment"
    records = verdict["records"]
    assert (records["input"], records["output"], records["assertions"]) == (6000, 5994, 0), records
    assert records["distinct_assigned_ids"] == records["distinct_keys"] == CHURN_AND_KILL["keys"], records
    cluster = json.loads((run_dir / "cluster.json").read_text())
    assert cluster["topics"] == {"input": "events", "topic:event-ids": "event-ids", "topic:ids-changelog": "ids-changelog",
                                 "topic:self-check": "self-check"}
    assert set(verdict["topics"].values()) == {"events", "event-ids", "self-check"}
    logs = {p.name for p in (run_dir / "logs").glob("contract-app-*.log")}
    assert logs == {"contract-app-1.0.log", "contract-app-2.1.log", "contract-app-1.4.log"}


def test_an_app_that_stops_making_progress_is_stalled_and_judged_on_what_it_committed(runs_dir):
    """The app hangs on order 600 while it runs, holding the input's one partition past the drain's time (behind the
    suite's back: no program step paused it, so the drain has nothing to resume). The drain times out, the run is
    still judged: the partition stalled, the records past the group's committed offset are unprocessed, and the ones
    before it are each in the output once (none lost)."""
    # a group of its own: the churn test's check for leftover private directories runs beside it
    hangs = {**orders_py_profile(hang_at=600), "group_id": "orders-py-hangs"}
    # Stalled: the committed offset stood still for 10 s by the drain's end. The last commit, before order 600, comes
    # soon after the app's start, which a busy machine delays into the drain: 30 s of drain leave it 20 s for that.
    code, run_dir, verdict = soak(runs_dir, app_profile=hangs, program="1", interval_s=5,
                                  records=1500, keys=100, partitions=1, drain_timeout_s=30, stall_timeout_s=10)
    assert code == 1 and verdict is not None and verdict["status"] == "failed", verdict
    drain = json.loads((run_dir / "drain.json").read_text())
    assert drain["status"] == "timed out" and "stalled: partition(s) 0 of orders" in drain["summary"]
    [stalled] = drain["stalled"]
    assert (stalled["group"], stalled["partition"], stalled["end"]) == ("orders-py-hangs", 0, 1500)
    records = verdict["records"]
    judged = records["input"] - records["unprocessed"]
    assert records["input"] == 1500 and 0 < judged == stalled["committed"] < 600
    assert {k: v for k, v in verdict["anomalies"].items() if v} == {"stalled": 1, "unprocessed": records["unprocessed"]}
    assert records["output"] == judged, "each committed order once in the output"
    assert "order 600 read; waiting forever" in (run_dir / "logs" / "orders-py-hangs-1.0.log").read_text()
    timeline = json.loads((run_dir / "timeline.json").read_text())
    assert sum(r["n"] for r in timeline["produced"]) == 1500, "the time axis shows the whole input, unprocessed too"
    assert [e["partition"] for e in timeline["anomalies"]["stalled"]["events"]] == [0]
    report = (run_dir / "report.html").read_text()
    assert 'id="drain-timeout"' in report and "partition 0 of group <code>orders-py-hangs</code>" in report
    alert = next(a for a in alerts(runs_dir) if a["run_dir"] == str(run_dir))
    assert alert["message"].startswith(f"soak soak_eos_id_assignment FAILED: stalled=1, unprocessed={records['unprocessed']}")
    assert alert["details"][0].startswith("drain timed out: the app's group 'orders-py-hangs' still lags")


def test_a_kafka_streams_app_passes_churn_kill_and_a_broker_of_three_down_with_each_table_judged(runs_dir):
    """The enriched stream judged one to one by the header Kafka Streams forwards, the count and total tables judged
    against the inputs per key, through a graceful stop, a kill -9 and a broker of three killed and restarted; a quota
    on the app's own producer, set, verified and measured."""
    # on instance 2's producer: it runs from step 1 to the end, alone between the kill and the restart, so it writes
    # whatever the machine's speed; instance 1's first life may be killed before its JVM wrote anything
    quota = {"client_id": "{app_id}-2-StreamThread-1-producer", "producer_byte_rate": 10_000_000}
    code, run_dir, verdict = soak(runs_dir, app_profile=streams_app(), brokers=3, program="1 2 k1 b2- b2+ 1",
                                  interval_s=8, records=6000, keys=300, quotas=[quota])
    assert code == 0, (run_dir / "dags-test.log").read_text()[-3000:]
    assert verdict["status"] == "passed" and set(verdict["anomalies"].values()) == {0}, verdict
    rows = {row["version"]: row for row in verdict["matrix"]}
    assert set(rows) == {"orders-enriched", "orders-count", "orders-total"}
    assert {name: row["status"] for name, row in rows.items()} == dict.fromkeys(rows, "passed")
    assert rows["orders-enriched"]["records"]["output"] == 6000
    # {app_id} is the profile's group: the quota names instance 2's Streams producer (client.id <group>-<n> from the
    # properties file), which the brokers saw write
    [used] = verdict["quotas"]
    assert (used["client_id"], used["bit"]) == ("orders-streams-2-StreamThread-1-producer", False), used
    assert used["achieved"] > 0, used
    assert not private_files(run_dir)


# Another team's app on the shared cluster under the names the profile's app has in production: its groups (one per
# version's application id) with committed offsets, and the internal topics Kafka Streams made for them.
BYSTANDER_TOPICS = ("orders-streams-3.4.0-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog",
                    "orders-streams-4.3.1-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog",
                    "orders-streams-orders-by-customer-repartition")
BYSTANDER_GROUPS = ("orders-streams", "orders-streams-3.4.0", "orders-streams-4.3.1")


def bystander_config(cluster) -> dict:
    return {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_settings()}


def start_bystander(cluster) -> None:
    """Create the other app's topics and commit an offset of each of its groups."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(bystander_config(cluster))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in BYSTANDER_TOPICS]).values():
        future.result(30)
    producer = Producer(bystander_config(cluster))
    for topic in BYSTANDER_TOPICS:
        producer.produce(topic, b"state", key=b"customer-1")
    assert producer.flush(30) == 0
    for group in BYSTANDER_GROUPS:
        consumer = Consumer({**bystander_config(cluster), "group.id": group})
        consumer.commit(offsets=[TopicPartition(BYSTANDER_TOPICS[0], 0, 1)], asynchronous=False)
        consumer.close()


def bystander_left(cluster) -> dict:
    """What the cluster holds under the app's names: topics and groups (the other app's, and any the run left), and each
    of the other app's groups' committed offset."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(bystander_config(cluster))
    topics = {t for t in admin.list_topics(timeout=30).topics if t.startswith("orders-streams")}
    groups = {g.group_id for g in admin.list_consumer_groups(request_timeout=30).result(30).valid
              if g.group_id.startswith("orders-streams")}
    offsets = {}
    for group in BYSTANDER_GROUPS:
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(BYSTANDER_TOPICS[0], 0)])]
        [listed] = admin.list_consumer_group_offsets(request).values()
        offsets[group] = listed.result(30).topic_partitions[0].offset
    return {"topics": topics, "groups": groups, "offsets": offsets}


def stop_bystander(cluster) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(bystander_config(cluster))
    for future in [*admin.delete_consumer_groups(list(BYSTANDER_GROUPS)).values(),
                   *admin.delete_topics(list(BYSTANDER_TOPICS)).values()]:
        future.exception(30)


def test_a_kafka_streams_app_with_planted_faults_on_a_secured_shared_cluster_fails_with_exact_counts(
        runs_dir, scram_connection, secured_cluster):
    """One planted fault per contract: order 77 never enriched is one lost record of the one-to-one output; order 77
    counted twice is one wrong key of the count table; the total table stays right. The app is built on two Kafka
    Streams releases and run as a version matrix of its profile: each release has its own group, instances and
    outputs, and each output of each is judged on its own. On a shared SCRAM-secured cluster (backend external): the
    topics are scoped to the run and reach the app through its placeholders, the app authenticates with what the
    properties file holds, and the password is in no file of the run. Another app of the same group and application
    ids lives on the cluster: the run joins none of its groups and release deletes nothing of it."""
    start_bystander(secured_cluster)
    try:
        code, run_dir, verdict = soak(runs_dir, app_profile=streams_app("drop", "double-count", versions=VERSIONS),
                                      backend="external", kafka_conn_id=scram_connection, program="1 2 1",
                                      interval_s=6, records=3000, keys=300)
        left = bystander_left(secured_cluster)
    finally:
        stop_bystander(secured_cluster)
    assert left == {"topics": set(BYSTANDER_TOPICS), "groups": set(BYSTANDER_GROUPS),
                    "offsets": dict.fromkeys(BYSTANDER_GROUPS, 1)}, left
    cluster = json.loads((run_dir / "cluster.json").read_text())
    scoped = {s["app_id"] for s in cluster["subjects"]}
    assert len(scoped) == 2 and not scoped & set(BYSTANDER_GROUPS), scoped
    assert all(a.startswith("orders-streams-") and a.endswith(VERSIONS) for a in scoped), scoped
    assert code == 1 and verdict is not None and verdict["status"] == "failed", verdict
    assert {k: v for k, v in verdict["anomalies"].items() if v} == {"lost": 2, "wrong_aggregate": 2}, verdict
    rows = {row["version"]: row for row in verdict["matrix"]}
    assert {name: {k: v for k, v in row["anomalies"].items() if v} for name, row in rows.items()} == {
        f"{output}@{version}": found for version in VERSIONS for output, found in (
            ("orders-enriched", {"lost": 1}), ("orders-count", {"wrong_aggregate": 1}), ("orders-total", {}))}
    assert [s["id"] for s in verdict["samples"]["lost"]] == [77, 77]
    for wrong in verdict["samples"]["wrong_aggregate"]:
        assert {k: wrong[k] for k in ("key", "inputs", "expected", "found")} == \
            {"key": "customer-76", "inputs": 10, "expected": "10", "found": "11"}, wrong
    prefix = f"soak.soak_eos_id_assignment.{run_dir.name}"
    topics = json.loads((run_dir / "cluster.json").read_text())["topics"]
    assert topics["input"] == f"{prefix}.orders"
    assert topics["topic:orders-count.3.4.0"] == f"{prefix}.orders-count.3.4.0"
    app_ids = {s["version"]: s["app_id"] for s in cluster["subjects"]}
    for version in VERSIONS:  # each instance ran its own release, on the one input
        log = (run_dir / "logs" / f"{app_ids[version]}-1.0.log").read_text()
        assert f"(topics: [{prefix}.orders])" in log and f"Kafka Streams version: {version}" in log
    report = (run_dir / "report.html").read_text()
    assert "orders-count@4.3.1 (aggregate count)" in report and "judged by the contract its profile declares" in report
    assert (run_dir / "subjects" / "orders-count@3.4.0" / "data_docs" / "index.html").exists()
    timeline = json.loads((run_dir / "timeline.json").read_text())
    assert [e["id"] for e in timeline["anomalies"]["lost @orders-enriched@4.3.1"]["events"]] == [77]
    assert not leaked_secret(run_dir) and not private_files(run_dir)
