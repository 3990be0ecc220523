"""The report's time axis, computed by the checker: real Spark (local) on a small history with one of each anomaly,
each placed at a known moment, so the report points at the second (and instance) where it happened."""

import json
import struct

import anomalies
import contract_aggregate
import contract_id_assignment
import contract_one_to_one
import contract_workflow
import timeline

from kafka_soak.shared import contracts

T0 = 1_700_000_000_000  # ms


def topic(spark, records):
    """``(partition, offset, value, kafka timestamp ms)`` -> a raw topic frame as the Kafka reader gives it."""
    rows = [(p, o, None, json.dumps(v), ts) for (p, o, v, ts) in records]
    return spark.createDataFrame(rows, "partition INT, offset LONG, key STRING, value STRING, timestamp LONG")


def test_every_anomaly_is_on_the_time_axis_with_its_instance(spark):
    inputs = [(0, i, {"id": i, "key": f"k{i % 2}", "seq": i // 2 + 1, "ts": T0 + i * 1000}, T0 + i * 1000)
              for i in range(1, 9)]

    def out(offset, i, key, seq, aid, instance, second):
        return (0, offset, {"id": i, "key": key, "seq": seq, "assigned_id": aid, "instance": instance,
                            "in_partition": i % 4, "in_offset": i}, T0 + second * 1000)

    outputs = [
        out(0, 1, "k1", 1, 10, 1, 10), out(1, 3, "k1", 2, 10, 1, 10),    # id 2 lost (produced at T0+2 s)
        out(2, 4, "k0", 3, 20, 1, 11), out(3, 4, "k0", 3, 20, 2, 12),    # id 4 twice: by instance 1, then 2
        out(4, 5, "k1", 3, 10, 2, 12), out(5, 99, "kx", 1, 40, 2, 13),   # id 99 unexpected
        out(6, 8, "k0", 5, 20, 2, 13), out(7, 6, "k0", 4, 20, 2, 14),    # id 6 after id 8 in key k0
        out(8, 7, "k1", 4, 30, 3, 15),                                   # k1 gets a second id
    ]
    assertions = [(0, 0, {"kind": "stale_state", "key": "k1", "expected": 4, "found": 3, "partition": 3,
                          "instance": 2, "step": "3", "ts": T0 + 16_500}, T0 + 16_500)]
    history = {"input": anomalies.parse(topic(spark, inputs), anomalies.INPUT_SCHEMA),
               "output": anomalies.parse(topic(spark, outputs), anomalies.OUTPUT_SCHEMA),
               "assertions": anomalies.parse(topic(spark, assertions), anomalies.ASSERTION_SCHEMA)}
    frames = contract_id_assignment.frames(history["input"], history["output"], history["assertions"])
    stall = {"group": "app", "partition": 2, "since": (T0 + 17_000) / 1000, "owner": "app-3"}
    frames["progress"] = anomalies.progress(spark, {0: (9, 9), 2: (4, 6)}, [stall])
    data = timeline.build(history, frames, set(contracts.CONTRACTS[contracts.ID_ASSIGNMENT].judged))
    second = T0 // 1000

    assert [(r["t"] - second, r["n"]) for r in data["produced"]] == [(i, 1) for i in range(1, 9)]
    committed = {(r["t"] - second, r["instance"]): r["n"] for r in data["committed"]}
    assert committed == {(10, 1): 2, (11, 1): 1, (12, 2): 2, (13, 2): 2, (14, 2): 1, (15, 3): 1}

    events = {name: [(e["ts"] - T0, e["instance"], e["partition"], e["id"], e["key"]) for e in found["events"]]
              for name, found in data["anomalies"].items()}
    assert events["lost"] == [(2000, None, 0, 2, "k0")], "a lost record sits where it was produced"
    assert events["duplicated"] == [(11000, 1, 0, 4, "k0"), (12000, 2, 0, 4, "k0")], "every copy, by who wrote it"
    assert events["unexpected"] == [(13000, 2, 3, 99, "kx")]
    assert events["reordered"] == [(14000, 2, 2, 6, "k0")]
    assert events["id_reuse"] == [(15000, 3, 3, 7, "k1")]
    assert events["stale_state"] == [(16500, 2, 3, None, "k1")]
    assert events["stalled"] == [(17000, None, 2, None, None)], "a stalled partition from when the drain saw it stop"
    assert data["anomalies"]["stalled"]["events"][0]["detail"] == "no commit past offset 4 of 6 (owner app-3)"
    assert data["anomalies"]["reordered"]["events"][0]["detail"] == "seq 4 after 5"
    assert data["anomalies"]["id_reuse"]["events"][0]["detail"] == "key had id 10, now 30"
    assert data["anomalies"]["duplicated"]["per_second"] == [{"t": second + 11, "instance": 1, "n": 1},
                                                             {"t": second + 12, "instance": 2, "n": 1}]

    only_lost = timeline.build(history, frames, {"lost"})
    assert set(only_lost["anomalies"]) == {"lost"}, "events are looked up only for what the verdict found"
    assert only_lost["produced"] == data["produced"] and only_lost["committed"] == data["committed"]


def test_a_rolled_back_execution_is_on_the_time_axis_when_its_first_rollback_was_committed(spark):
    inputs = [(0, 0, {"id": 1, "key": "k0", "seq": 1, "ts": T0}, T0)]
    version = lambda o, runs, instance, second: (0, o, {"id": 1, "key": "k0", "state": "RUNNING", "task_runs": runs,
                                                        "instance": instance, "in_partition": 2}, T0 + second * 1000)
    versions = [version(0, {"t1": "CREATED", "t2": "CREATED"}, 1, 1), version(1, {"t1": "SUCCESS", "t2": "CREATED"}, 1, 2),
                version(2, {"t1": "CREATED", "t2": "RUNNING"}, 2, 3)]
    history = {"input": anomalies.parse(topic(spark, inputs), anomalies.INPUT_SCHEMA),
               "output": anomalies.parse(topic(spark, []), anomalies.OUTPUT_SCHEMA),
               "assertions": anomalies.parse(topic(spark, []), anomalies.ASSERTION_SCHEMA),
               "executions": anomalies.parse(topic(spark, versions), contract_workflow.EXECUTION_SCHEMA)}
    frames = contract_workflow.frames(history["input"], history["output"], history["executions"])
    data = timeline.build(history, frames, {"lost", "rolled_back"})
    [event] = data["anomalies"]["rolled_back"]["events"]
    assert (event["ts"] - T0, event["instance"], event["partition"], event["id"]) == (3000, 2, 2, 1)
    assert event["detail"] == "task t1: SUCCESS -> CREATED at offset 2"
    assert [e["id"] for e in data["anomalies"]["lost"]["events"]] == [1]


def test_few_flagged_records_are_looked_up_by_broadcast_and_many_by_a_shuffle(spark, monkeypatch):
    """The history is not shuffled to find a few flagged records (their ids go to every partition of it), and a run
    with more than BROADCAST_ROWS of them is joined the ordinary way; both find the same rows."""
    plan = lambda frame: frame._jdf.queryExecution().executedPlan().toString()
    history = spark.range(1000).selectExpr("id", "id * 2 AS twice")
    flagged = history.where("id % 100 = 0").select("id")
    monkeypatch.setattr(anomalies, "BROADCAST_ROWS", 10)
    few = anomalies.lookup(history, flagged, "id")
    monkeypatch.setattr(anomalies, "BROADCAST_ROWS", 9)
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # Spark would broadcast a range this small itself
    try:
        many = anomalies.lookup(history, flagged, "id")
        assert "BroadcastHashJoin" in plan(few) and "BroadcastHashJoin" not in plan(many)
        assert sorted(r.twice for r in few.collect()) == sorted(r.twice for r in many.collect()) == \
            list(range(0, 2000, 200))
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)


RAW = "partition INT, offset LONG, key STRING, value BINARY, timestamp LONG, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"


def raw_topic(spark, records):
    """``(partition, offset, key, value bytes, second, {header: value})`` -> a topic as ``kafka_topics.read(raw=True)``
    has it, each record written at T0 + second."""
    rows = [(p, o, k, v, T0 + s * 1000, [(n, str(h).encode()) for n, h in headers.items()])
            for p, o, k, v, s, headers in records]
    return spark.createDataFrame(rows, RAW)


def team_history(spark, outputs, table: bool):
    """Orders 1-8 produced at T0 + id seconds by the harness (ids and seqs in headers) and what a team's app wrote."""
    inputs = [(0, i, f"k{i % 2}", b"{}", i, {"soak.id": i, "soak.seq": i // 2 + 1}) for i in range(1, 9)]
    out = raw_topic(spark, outputs)
    return {"input": anomalies.parse_input(raw_topic(spark, inputs), values=table),
            "output": contract_aggregate.parse_table(out) if table else contract_one_to_one.parse_output(out, "header")}


def test_a_one_to_one_outputs_anomalies_are_on_the_time_axis(spark):
    """A team's app's output: when it committed (its instances are unknown), its lost, duplicated, unexpected and
    reordered records at their moments; a record's key as judged is its input's, as the event shows it as written."""
    plan = [(0, 0, 1, 10), (0, 1, 4, 11), (0, 2, 4, 12), (0, 3, 5, 12), (0, 4, 99, 13), (0, 5, 8, 13), (0, 6, 6, 14),
            (0, 7, 7, 15), (1, 0, 3, 15)]
    history = team_history(spark, [(p, o, f"c{i}", b"", s, {"soak.id": i}) for p, o, i, s in plan], table=False)
    frames = contract_one_to_one.frames(history["input"], history["output"])
    data = timeline.build(history, frames, set(contracts.CONTRACTS[contracts.ONE_TO_ONE].judged))
    second = T0 // 1000
    assert [(r["t"] - second, r["n"]) for r in data["produced"]] == [(i, 1) for i in range(1, 9)]
    assert {(r["t"] - second, r["instance"]): r["n"] for r in data["committed"]} == {
        (10, None): 1, (11, None): 1, (12, None): 2, (13, None): 2, (14, None): 1, (15, None): 2}
    events = {name: [(e["ts"] - T0, e["id"], e["key"], e["detail"]) for e in found["events"]]
              for name, found in data["anomalies"].items()}
    assert events == {"lost": [(2000, 2, "k0", "seq 2")], "duplicated": [(11000, 4, "c4", "copy of 2"),
                                                                         (12000, 4, "c4", "copy of 2")],
                      "unexpected": [(13000, 99, "c99", None)], "reordered": [(14000, 6, "c6", "seq 4 after 5")]}


def test_each_wrong_key_of_an_aggregate_is_on_the_time_axis_once(spark):
    """A count table with a wrong key (at its last value), a key without a value (at its last input) and a value for
    a key without inputs; the table's updates as committed records."""
    table = [(0, 0, "k0", struct.pack(">q", 3), 19, {}), (0, 1, "k0", struct.pack(">q", 5), 20, {}),
             (1, 0, "k9", struct.pack(">q", 1), 21, {})]
    history = team_history(spark, table, table=True)
    frames = contract_aggregate.frames(history["input"], history["output"], "count", "", "json", {"encoding": "int64"})
    data = timeline.build(history, frames, {"wrong_aggregate"})
    assert [(r["t"] - T0 // 1000, r["n"]) for r in data["committed"]] == [(19, 1), (20, 1), (21, 1)]
    events = [(e["ts"] - T0, e["partition"], e["id"], e["key"], e["detail"])
              for e in data["anomalies"]["wrong_aggregate"]["events"]]
    assert events == [(7000, 0, None, "k1", "expected 4, found none"), (20000, 0, None, "k0", "expected 4, found 5"),
                      (21000, None, None, "k9", "expected 0, found 1")]
