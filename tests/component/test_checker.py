"""The checker's logic on small frames: real Spark (local) and the real Great Expectations suites (the job as the DAG
submits it runs in every end-to-end soak)."""

import argparse
import json
import struct

import anomalies
import contract_aggregate
import contract_id_assignment
import contract_one_to_one
import contract_workflow
import validate_soak
import verdict
from pyspark.sql import functions as F
from support import ROOT
from support.outside_apps import output_subject

from kafka_soak.shared import contracts, verdicts

SUITES = ROOT / "expectations"


def topic(spark, records):
    rows = [(p, o, None, json.dumps(v), 0) for (p, o, v) in records]
    raw = spark.createDataFrame(rows, "partition INT, offset LONG, key STRING, value STRING, timestamp LONG")
    return raw


def test_each_anomaly_is_counted_exactly(spark, tmp_path):
    inputs = [(0, i, {"id": i, "key": f"k{i % 2}", "seq": i // 2 + 1, "ts": 0}) for i in range(1, 9)]
    out = lambda o, i, key, seq, aid: (0, o, {"id": i, "key": key, "seq": seq, "assigned_id": aid, "instance": 1,
                                              "in_partition": 0, "in_offset": i})
    outputs = [
        out(0, 1, "k1", 1, 10), out(1, 3, "k1", 2, 10),          # id 2 lost
        out(2, 4, "k0", 3, 20), out(3, 4, "k0", 3, 20),          # id 4 duplicated
        out(4, 5, "k1", 3, 10), out(5, 99, "kx", 1, 40),         # id 99 unexpected
        out(6, 8, "k0", 5, 20), out(7, 6, "k0", 4, 20),          # id 6 after id 8 in key k0: reordered
        out(8, 7, "k1", 4, 30),                                  # k1 gets a second id: id_reuse
    ]
    assertions = [(0, 0, {"kind": "stale_state", "key": "k1", "expected": 4, "found": 3, "partition": 0,
                          "instance": 2, "step": 3, "ts": 0})]
    history = {
        "input": anomalies.parse(topic(spark, inputs), anomalies.INPUT_SCHEMA),
        "output": anomalies.parse(topic(spark, outputs), anomalies.OUTPUT_SCHEMA),
        "assertions": anomalies.parse(topic(spark, assertions), anomalies.ASSERTION_SCHEMA),
    }
    frames = contract_id_assignment.frames(history["input"], history["output"], history["assertions"])
    crash = {"kind": "unexpected_exit", "instance": 2, "at": 1.0, "what": "instance 2 exited by itself with exit code 1",
             "log": "app-2.1.log"}
    frames["app_health"] = anomalies.incidents(spark, {"incidents": [crash]})
    # partition 1 stalled with 2 records past the group's committed offset; partition 0 done
    stall = {"group": "app", "partition": 1, "committed": 3, "end": 5, "lag": 2, "since": 12.5, "owner": "app-2"}
    frames["progress"] = anomalies.progress(spark, {0: (9, 9), 1: (3, 5)}, [stall])
    judged = contracts.CONTRACTS[contracts.ID_ASSIGNMENT].judged
    results = validate_soak.run_suites(frames, SUITES, tmp_path / "docs", {"expected_records": 8,
                                                                           "health_allowance": 0}, judged)
    outcome = verdict.decide(results, {}, judged)
    assert outcome["status"] == "failed"
    assert outcome["anomalies"] == {"lost": 1, "duplicated": 1, "unexpected": 1, "id_reuse": 1, "stale_state": 1,
                                    "reordered": 1, "app_health": 1, "resource_growth": 0, "stalled": 1, "unprocessed": 2}
    assert outcome["samples"]["stalled"] == [{"partition": 1, "committed": 3, "end": 5, "since": 12.5, "owner": "app-2"}]
    assert outcome["samples"]["unprocessed"] == [{"partition": 1, "committed": 3, "end": 5, "unprocessed": 2}]
    assert outcome["samples"]["app_health"] == [{k: crash[k] for k in ("kind", "instance", "what", "log")}]
    assert outcome["samples"]["lost"] == [{"id": 2, "key": "k0", "seq": 2}]
    assert outcome["samples"]["unexpected"][0]["id"] == 99
    assert outcome["samples"]["stale_state"] == [{"kind": "stale_state", "key": "k1", "expected": 4, "found": 3,
                                                  "partition": 0, "instance": 2, "step": "3"}]
    assert (tmp_path / "docs" / "index.html").exists()
    pages = {suite: len(list((tmp_path / "docs" / "validations" / suite).rglob("*.html")))
             for suite in ("input_ids", "outputs", "key_ids", "assigned_ids", "assertions", "app_health", "progress")}
    assert pages == dict.fromkeys(pages, 1), "a suite validated again for its samples is one result in Data Docs"


def test_an_input_id_produced_twice_makes_the_run_inconclusive(spark, tmp_path):
    record = {"id": 1, "key": "k0", "seq": 1, "ts": 0}
    output = {**record, "assigned_id": 10, "instance": 1, "in_partition": 0, "in_offset": 0}
    frames = contract_id_assignment.frames(
        anomalies.parse(topic(spark, [(0, 0, record), (0, 1, record)]), anomalies.INPUT_SCHEMA),
        anomalies.parse(topic(spark, [(0, 0, output)]), anomalies.OUTPUT_SCHEMA),
        anomalies.parse(topic(spark, []), anomalies.ASSERTION_SCHEMA))
    results = validate_soak.run_suites(frames, SUITES, tmp_path / "docs", {"expected_records": 2})
    outcome = verdict.decide(results, truncated={})
    assert outcome["status"] == "inconclusive"
    assert [r.split(":")[0] for r in outcome["inconclusive_reasons"]] == ["input_duplicated"]
    assert not any(outcome["anomalies"].values())


def test_inputs_and_outputs_meet_by_id_in_a_hash_aggregation_and_only_the_ids_the_run_got_wrong_reach_the_outputs(
        spark):
    """The plan that keeps a large run's frames cheap: the aggregation by id hashes (its buffers are fixed-width: a
    struct or a string in them makes Spark sort both sides of the shuffle), and the outputs are not shuffled by id,
    the few ids the run got wrong are broadcast to them. A record without an id matches nothing, each on its own:
    an input without one is lost (with its key, as the samples show it), an output without one unexpected."""
    record = lambda i, key, seq: {"id": i, "key": key, "seq": seq, "ts": 0}
    inputs = [(0, o, record(i, "k", o)) for o, i in enumerate([1, 2, 3])] + [(0, 3, {"key": "no-id", "seq": 9})]
    out = lambda o, i, seq: (0, o, {**record(i, "k", seq), "assigned_id": 10, "instance": 1, "in_partition": 0,
                                    "in_offset": o})
    outputs = [out(0, 1, 0), out(1, 2, 1), out(2, 7, 2), out(3, 2, 1), (0, 4, {"key": "k", "seq": 3})]
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # Spark would broadcast frames this small itself
    try:
        history = (anomalies.parse(topic(spark, inputs), anomalies.INPUT_SCHEMA),
                   anomalies.parse(topic(spark, outputs), anomalies.OUTPUT_SCHEMA))
        frames = contract_id_assignment.frames(*history, anomalies.parse(topic(spark, []), anomalies.ASSERTION_SCHEMA))
        plan = lambda frame: frame._jdf.queryExecution().executedPlan().toString()
        by_id, outputs_plan = plan(anomalies.by_id(*history)), plan(frames["outputs"])
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)
    assert "HashAggregate" in by_id and "SortAggregate" not in by_id
    assert "BroadcastHashJoin" in outputs_plan and "SortMergeJoin" not in outputs_plan
    rows = lambda name, where, *columns: sorted((tuple(r) for r in frames[name].where(where).select(*columns).collect()),
                                                key=repr)
    assert rows("input_ids", "outputs <> 1", "id", "key", "outputs") == [(2, "k", 2), (3, "k", 0), (None, "no-id", 0)]
    assert rows("outputs", "NOT known", "id", "topic_offset") == [(7, 2), (None, 4)]
    assert rows("outputs", "NOT in_order", "id") == []  # id 2's repeat after seq 2 is a duplicate, not late


def test_app_health_fails_only_beyond_the_allowance(spark, tmp_path):
    """Two incidents pass with health_allowance 2 and fail with 1, where both count."""
    incidents = [{"kind": "error", "instance": 1, "at": float(n), "what": f"error {n}", "log": "a.log"} for n in (1, 2)]
    frames = {"app_health": anomalies.incidents(spark, {"incidents": incidents})}
    within = verdict.decide(validate_soak.run_suites(frames, SUITES, tmp_path / "a", {"health_allowance": 2}), {})
    beyond = verdict.decide(validate_soak.run_suites(frames, SUITES, tmp_path / "b", {"health_allowance": 1}), {})
    assert (within["status"], within["anomalies"]["app_health"]) == ("passed", 0)
    assert (beyond["status"], beyond["anomalies"]["app_health"]) == ("failed", 2)


def test_the_workflow_contract_counts_rolled_back_executions_and_judges_only_its_own_anomalies(spark, tmp_path):
    """An execution is rolled back once per version that loses a task run or moves one backwards; the verdict counts
    executions, names the first rollback, and judges none of the id-assignment anomalies (ends come in any order)."""
    inputs = [(0, i - 1, {"id": i, "key": "k0", "seq": i, "ts": 0}) for i in (1, 2, 3, 4)]
    end = lambda o, i: (0, o, {"id": i, "key": "k0", "seq": i, "state": "SUCCESS", "instance": 1, "in_partition": 0,
                               "in_offset": i - 1})
    outputs = [end(0, 3), end(1, 1), end(2, 2), end(3, 2)]  # out of order (not judged); 2 ended twice; 4 never
    version = lambda o, i, runs, state="RUNNING": (0, o, {"id": i, "key": "k0", "state": state, "task_runs": runs,
                                                           "instance": 2, "in_partition": 0})
    versions = [
        version(0, 1, {}, "CREATED"), version(1, 1, {"t1": "CREATED", "t2": "CREATED"}),
        version(2, 1, {"t1": "SUCCESS", "t2": "CREATED"}),
        version(3, 1, {"t1": "RUNNING", "t2": "RUNNING"}),            # t1 went back: SUCCESS -> RUNNING
        version(4, 1, {"t1": "SUCCESS", "t2": "SUCCESS"}, "SUCCESS"),
        version(5, 2, {"t1": "CREATED", "t2": "CREATED"}), version(6, 2, {"t2": "RUNNING"}),  # t1 lost
        version(7, 2, {"t2": "SUCCESS"}),                              # still without t1: the same rollback
        version(8, 3, {"t1": "CREATED", "t2": "CREATED"}), version(9, 3, {"t1": "RUNNING", "t2": "CREATED"}),
        version(10, 3, {"t1": "SUCCESS", "t2": "SUCCESS"}, "SUCCESS"),  # only forward
        version(11, 4, {}, "CREATED"), version(12, 4, {"t1": "CREATED"}),
        version(13, 4, {"t1": "RUNNING"}, "CREATED"),  # the task moved on, the execution went back: RUNNING -> CREATED
    ]
    parse = lambda records, schema: anomalies.parse(topic(spark, records), schema)
    frames = contract_workflow.frames(parse(inputs, anomalies.INPUT_SCHEMA), parse(outputs, anomalies.OUTPUT_SCHEMA),
                                      parse(versions, contract_workflow.EXECUTION_SCHEMA))
    assert sorted(frames) == ["executions", "input_ids", "outputs"]
    rows = {r["id"]: r for r in frames["executions"].collect()}
    assert {i: (r["versions"], r["rollbacks"]) for i, r in rows.items()} == {1: (5, 1), 2: (3, 1), 3: (3, 0),
                                                                            4: (3, 1)}
    assert rows[1]["first_rollback"] == "task t1: SUCCESS -> RUNNING at offset 3"
    assert rows[2]["first_rollback"] == "task t1: CREATED -> missing at offset 6"
    assert rows[4]["first_rollback"] == "execution: RUNNING -> CREATED at offset 13"
    assert rows[1]["final_state"] == "SUCCESS" and rows[3]["rolled_back_by"] is None

    judged = contracts.CONTRACTS[contracts.WORKFLOW].judged
    outcome = verdict.decide(validate_soak.run_suites(frames, SUITES, tmp_path / "docs", {"expected_records": 4},
                                                      judged), {}, judged)
    assert outcome["anomalies"] == {"lost": 1, "duplicated": 1, "unexpected": 0, "rolled_back": 3, "app_health": 0,
                                    "resource_growth": 0, "stalled": 0, "unprocessed": 0}
    assert outcome["status"] == "failed"
    assert sorted(s["id"] for s in outcome["samples"]["rolled_back"]) == [1, 2, 4]
    assert {e["anomaly"] for e in outcome["expectations"]} == {None, "lost", "duplicated", "unexpected", "rolled_back"}


# A team's own app (an app profile): input records carry the soak's headers, values are the app's own format.
RAW = "partition INT, offset LONG, key STRING, value BINARY, timestamp LONG, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
ORDERS = [(i, f"k{i % 2}", i // 2 + 1) for i in range(1, 9)]  # (id, key, seq): k1 has ids 1 3 5 7, k0 2 4 6 8
ARGS = argparse.Namespace(suites_dir=SUITES, expected_records=len(ORDERS), input_topic="orders")
NO_HEALTH = {"incidents": [], "allowance": 0}


def raw_topic(spark, records):
    """``(partition, offset, key, value bytes, {header: value})`` -> a topic as ``kafka_topics.read(raw=True)`` has it."""
    rows = [(p, o, k, v, 0, [(name, str(h).encode()) for name, h in headers.items()]) for p, o, k, v, headers in records]
    return spark.createDataFrame(rows, RAW)


def team_inputs(spark, values=lambda i: json.dumps({"orderId": i}).encode()):
    """The orders as a team's app reads them: ids and seqs in headers, ``values`` its own format."""
    records = [(0, n, key, values(i), {"soak.id": i, "soak.seq": seq}) for n, (i, key, seq) in enumerate(ORDERS)]
    return anomalies.parse_input(raw_topic(spark, records), values=True)


def test_a_one_to_one_output_is_judged_record_by_record_by_its_header_or_json_ids(spark, tmp_path):
    """Each input once in the output, in seq order within its key in each partition, with the key and seq of its
    input (the app rekeys and drops soak.seq); the id read from the soak.id header or from a JSON path, alike."""
    plan = [(0, 0, 1), (0, 1, 4), (0, 2, 4), (0, 3, 5), (0, 4, 99), (0, 5, 8), (0, 6, 6), (0, 7, 7),  # 2 lost, 4 twice
            (1, 0, 3)]  # k1's seq 2 after its seq 3, but in another partition: in order
    by_header = [(p, o, f"customer-{i}", b"\x00opaque", {"soak.id": i}) for p, o, i in plan]
    subject = output_subject("orders-enriched", contract="one-to-one", id_from="header")
    history = {"input": team_inputs(spark), "output": contract_one_to_one.parse_output(raw_topic(spark, by_header), "header")}
    outcome, (_, frames) = validate_soak.judge(spark, ARGS, subject, history, {}, NO_HEALTH,
                                               validate_soak.health_owner(subject, [subject]), tmp_path, {}, {})
    assert outcome["status"] == "failed"
    assert outcome["anomalies"] == {"lost": 1, "duplicated": 1, "unexpected": 1, "reordered": 1, "app_health": 0,
                                    "resource_growth": 0, "stalled": 0, "unprocessed": 0}
    assert outcome["samples"] == {
        "lost": [{"id": 2, "key": "k0", "seq": 2}], "duplicated": [{"id": 4, "key": "k0", "seq": 3, "outputs": 2}],
        "unexpected": [{"id": 99, "key": None, "topic_partition": 0, "topic_offset": 4}],  # GX leaves out seq: null
        "reordered": [{"id": 6, "key": "k0", "seq": 4, "topic_partition": 0, "topic_offset": 6}]}
    assert (outcome["label"], outcome["contract"]) == ("orders-enriched (one-to-one)", "one-to-one")
    assert outcome["records"] == {"input": 8, "output": 9, "expected_input": 8, "unprocessed": 0}

    by_json = [(p, o, None, json.dumps({"orderId": i, "total": 1.5}).encode(), {}) for p, o, i in plan]
    json_frames = contract_one_to_one.frames(history["input"], contract_one_to_one.parse_output(raw_topic(spark, by_json),
                                                                                "json:$.orderId"))
    rows = lambda frame: sorted(map(tuple, frame.collect()), key=repr)
    assert {n: rows(f) for n, f in json_frames.items()} == {n: rows(frames[n]) for n in json_frames}


def int64(n) -> bytes:
    """A number as Kafka's LongSerializer writes it."""
    return struct.pack(">q", n)


def test_numbers_are_read_from_each_encoding_exactly(spark):
    """Big-endian int32/int64 (negative too; other lengths are no number), text and JSON, as exact decimals."""
    values = [struct.pack(">i", -2), int64(-(2 ** 40)), b"\x00\x01\x02", b" 12.50 ", b'{"a": {"b": 0.1}}', b"7", b"x"]
    frame = spark.createDataFrame([(bytearray(v),) for v in values], "value BINARY")
    decoded = {encoding + path: [None if r[0] is None else format(r[0].normalize(), "f") for r in
                                 frame.select(contract_aggregate.number(F.col("value"), encoding, path)).collect()]
               for encoding, path in (("int32", ""), ("int64", ""), ("string", ""), ("json", "$.a.b"), ("json", ""))}
    assert decoded["int32"][0] == "-2" and decoded["int32"][2] is None
    assert decoded["int64"][1] == str(-(2 ** 40))
    assert decoded["string"][3:] == ["12.5", None, "7", None]
    assert decoded["json$.a.b"] == [None, None, None, None, "0.1", None, None]
    assert decoded["json"][3:] == ["12.5", None, "7", None], "a JSON value that is a number"


AMOUNTS = {1: 10.5, 3: 2, 5: 0.25, 7: 1, 2: 100, 4: -3, 6: 3, 8: 4}  # by id: k1 has 1 3 5 7, k0 2 4 6 8
NESTED = {i: 9 - i for i in AMOUNTS}


def test_an_aggregate_output_is_the_function_over_each_keys_inputs_as_its_table_last_holds_it(spark):
    """count, sum, min, max and latest over the orders, each table in another encoding, hold the right values: a
    key's last value is at its highest offset in its partition (an earlier offset written later loses), across
    partitions the latest by timestamp; a tombstone leaves no value (a key without inputs may end in one; a key whose
    value was deleted and set again has it); float noise past nine decimals is not a wrong sum."""
    inputs = team_inputs(spark, lambda i: json.dumps({"amount": AMOUNTS[i], "n": {"v": NESTED[i]}}).encode())
    cases = {  # function, field, table value: how it is decoded and how the app wrote it, expected per key
        "count": ("", {"encoding": "int64"}, int64, {"k0": 4, "k1": 4}),
        "sum": ("amount", {"encoding": "json", "path": "$.total"}, lambda n: json.dumps({"total": n + 1e-12}).encode(),
                {"k0": 104, "k1": 13.75}),
        "min": ("$.n.v", {"encoding": "int32"}, lambda n: struct.pack(">i", n), {"k0": 1, "k1": 2}),
        "max": ("amount", {"encoding": "string"}, lambda n: str(n).encode(), {"k0": 100, "k1": 10.5}),
        "latest": ("amount", {"encoding": "json"}, lambda n: json.dumps(n).encode(), {"k0": 4, "k1": 1}),
    }
    for function, (field, value, encode, expected) in cases.items():
        right, wrong = ({key: encode(n + off) for key, n in expected.items()} for off in (0, 1))
        table = [(0, 0, "gone", encode(5), {}), (0, 1, "k0", wrong["k0"], {}), (0, 2, "k0", None, {}),
                 (0, 3, "k0", right["k0"], {}), (0, 4, "gone", None, {}), (0, 5, "k1", wrong["k1"], {}),
                 (1, 0, "k1", right["k1"], {})]
        raw = raw_topic(spark, table).withColumn("timestamp", F.when(F.col("partition") == 1, 9).otherwise(
            F.when(F.col("offset") == 3, 1).otherwise(F.col("offset") + 2)))  # k0's last offset was written first
        frames = contract_aggregate.frames(inputs, contract_aggregate.parse_table(raw), function, field, "json", value)
        found = {r["key"]: (r["inputs"], r["expected"], r["found"], r["correct"]) for r in frames["aggregates"].collect()}
        assert found == {key: (4, f"{n:g}", f"{n:g}", True) for key, n in expected.items()}, function


def test_the_outputs_of_a_team_app_are_judged_each_by_its_contract_and_its_app_health_once(spark, tmp_path):
    """Two outputs of one app, one verdict each, combined: the app's incident (its instances run as subject "") is
    counted with its first output only; the count table has a wrong key, a key with inputs but no value and a value
    for a key without inputs."""
    inputs = team_inputs(spark)
    enriched = output_subject("orders-enriched", contract="one-to-one", id_from="json:$.orderId")
    counted = output_subject("orders-count", contract="aggregate", function="count", field="", value={"encoding": "int64"})
    outputs = [(i % 2, n, key, json.dumps({"orderId": i}).encode(), {}) for n, (i, key, _) in enumerate(ORDERS)]
    table = [(0, 0, "k0", int64(5), {}), (0, 1, "k9", int64(1), {})]  # k0 has 4 inputs; k1 no value; k9 no inputs
    histories = {"orders-enriched": contract_one_to_one.parse_output(raw_topic(spark, outputs), "json:$.orderId"),
                 "orders-count": contract_aggregate.parse_table(raw_topic(spark, table))}
    crash = {"kind": "unexpected_exit", "instance": 1, "subject": "", "at": 1.0, "what": "instance 1 exited",
             "log": "app-1.log"}
    health = {"incidents": [crash], "allowance": 0}
    subjects = [enriched, counted]
    judged = {s["name"]: validate_soak.judge(spark, ARGS, s, {"input": inputs, "output": histories[s["name"]]}, {},
                                             health, validate_soak.health_owner(s, subjects), tmp_path / s["name"],
                                             {}, {})[0]
              for s in subjects}
    outcome = verdicts.combine(judged)
    assert outcome["status"] == "failed"
    assert outcome["anomalies"] == {"lost": 0, "duplicated": 0, "unexpected": 0, "reordered": 0, "wrong_aggregate": 3,
                                    "app_health": 1, "resource_growth": 0, "stalled": 0, "unprocessed": 0}
    assert [(m["label"], m["status"], m["anomalies"]) for m in outcome["matrix"]] == [
        ("orders-enriched (one-to-one)", "failed", {"lost": 0, "duplicated": 0, "unexpected": 0, "reordered": 0,
                                                    "app_health": 1, "resource_growth": 0, "stalled": 0,
                                                    "unprocessed": 0}),
        ("orders-count (aggregate count)", "failed", {"wrong_aggregate": 3})]
    assert sorted(outcome["samples"]["wrong_aggregate"], key=lambda s: s["key"]) == [
        {"version": "orders-count", "key": "k0", "expected": "4", "found": "5", "inputs": 4},
        {"version": "orders-count", "key": "k1", "expected": "4", "found": None, "inputs": 4},
        {"version": "orders-count", "key": "k9", "expected": "0", "found": "1", "inputs": 0}]
    assert [s["what"] for s in outcome["samples"]["app_health"]] == ["instance 1 exited"]
    assert judged["orders-count"]["records"] == {"input": 8, "output": 2, "expected_input": 8, "unprocessed": 0,
                                                 "keys": 3}
    assert not outcome["inconclusive_reasons"]
    expectations = [(e["suite"], e["anomaly"]) for e in judged["orders-count"]["expectations"]]
    assert expectations == [("input_ids", None), ("input_ids", None), ("aggregates", "wrong_aggregate")], \
        "the input's completeness and unique ids; no record anomalies, and no app health with the second output"


def test_the_run_is_judged_on_what_the_app_committed(spark, tmp_path):
    """The group committed offsets 0-4 of the input's 8 records and stalled there: the 3 records past its committed
    offset are unprocessed, not lost; the 5 before it are judged (each in the output once); the stall fails the run.
    Without the stall, a scenario that allows a backlog passes with the 3 counted, if the drain saw the group working
    them off; else they fail it."""
    positions = {0: (5, 8)}
    inputs = anomalies.processed(team_inputs(spark), positions)
    done = [(0, o, f"customer-{i}", b"{}", {"soak.id": i}) for o, (i, _key, _seq) in enumerate(ORDERS[:5])]
    history = {"input": inputs, "output": contract_one_to_one.parse_output(raw_topic(spark, done), "header")}
    subject = output_subject("orders-enriched", contract="one-to-one", id_from="header")
    stall = {"group": "orders-enricher", "partition": 0, "committed": 5, "end": 8, "lag": 3, "since": 100.0,
             "owner": "orders-enricher-1"}
    crawling = {"group": "orders-enricher", "lag": 3, "allowed": False}
    outcome, _ = validate_soak.judge(spark, ARGS, subject, history, {}, NO_HEALTH, "", tmp_path / "stalled", positions,
                                     {"stalled": [stall], "backlog_allowed": True, "backlogs": [crawling]})
    assert (outcome["status"], outcome["inconclusive_reasons"]) == ("failed", [])
    assert {k: v for k, v in outcome["anomalies"].items() if v} == {"stalled": 1, "unprocessed": 3}
    assert outcome["records"]["input"] == 8 and outcome["records"]["unprocessed"] == 3
    assert outcome["samples"]["stalled"] == [{"partition": 0, "committed": 5, "end": 8, "since": 100.0,
                                              "owner": "orders-enricher-1"}]
    backlog, _ = validate_soak.judge(spark, ARGS, subject, history, {}, NO_HEALTH, "", tmp_path / "backlog", positions,
                                     {"stalled": [], "backlog_allowed": True, "backlogs": [{**crawling, "allowed": True}]})
    assert backlog["status"] == "passed" and backlog["anomalies"]["unprocessed"] == 3
    other, _ = validate_soak.judge(spark, ARGS, subject, history, {}, NO_HEALTH, "", tmp_path / "other", positions,
                                   {"stalled": [], "backlog_allowed": True,
                                    "backlogs": [{**crawling, "group": "another-app", "allowed": True}, crawling]})
    assert other["status"] == "failed", "another group's allowed backlog is not this one's"
    strict, _ = validate_soak.judge(spark, ARGS, subject, history, {}, NO_HEALTH, "", tmp_path / "strict", positions,
                                    {"stalled": []})
    assert strict["status"] == "failed" and {k: v for k, v in strict["anomalies"].items() if v} == {"unprocessed": 3}
