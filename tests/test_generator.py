"""The generator against a real Apache Kafka broker: contract fields, and exact resume after a crash."""

import json
import signal
import threading
import time

from confluent_kafka import Consumer, TopicPartition

from kafka_soak import generator, kafka_io
from kafka_soak.runtime.local import LocalProcesses


def read_all(bootstrap: str, topic: str) -> list[dict]:
    marks = kafka_io.watermarks(bootstrap, topic)
    consumer = Consumer(kafka_io.client_config(bootstrap, {"group.id": "test-reader"}))
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in marks.items()])
    records, want = [], sum(high - low for low, high in marks.values())
    deadline = time.monotonic() + 30
    while len(records) < want and time.monotonic() < deadline:
        records += [json.loads(m.value()) | {"_partition": m.partition()}
                    for m in consumer.consume(1000, 0.5) if not m.error()]
    consumer.close()
    return records


def test_records_follow_the_contract(broker):
    spec = generator.LoadSpec(broker.bootstrap_servers, broker.topics["input"], records=1000, keys=7, payload_bytes=16)
    assert generator.produce(spec) == 1000
    records = read_all(broker.bootstrap_servers, broker.topics["input"])
    assert sorted(r["id"] for r in records) == list(range(1, 1001))
    by_key: dict[str, list[int]] = {}
    for r in sorted(records, key=lambda r: r["id"]):
        assert r["_partition"] == generator.partition_of(r["key"], 4)
        assert len(r["payload"]) == 16
        by_key.setdefault(r["key"], []).append(r["seq"])
    assert len(by_key) == 7
    assert all(seqs == list(range(1, len(seqs) + 1)) for seqs in by_key.values())


def test_resume_after_kill_produces_every_id_exactly_once(broker, tmp_path):
    """kill -9 the generator mid-run, start it again: ids 1..N each appear once."""
    processes = LocalProcesses(tmp_path)
    args = ["--bootstrap", broker.bootstrap_servers, "--topic", broker.topics["input"], "--records", "6000",
            "--keys", "50", "--rate", "3000"]
    cmd = [__import__("sys").executable, "-m", "kafka_soak.generator", *args]
    processes.start("generator", cmd, tmp_path / "gen.1.log")
    deadline = time.monotonic() + 30  # the first records, however long the start takes on a busy machine
    while not any(high for _, high in kafka_io.watermarks(broker.bootstrap_servers, broker.topics["input"]).values()):
        assert time.monotonic() < deadline, (tmp_path / "gen.1.log").read_text()
        time.sleep(0.05)
    time.sleep(0.3)
    processes.process("generator").send_signal(signal.SIGKILL)
    time.sleep(0.3)
    partial = len(read_all(broker.bootstrap_servers, broker.topics["input"]))
    assert 0 < partial < 6000, "the kill must land mid-run for this test to mean anything"
    processes.start("generator", cmd, tmp_path / "gen.2.log")
    deadline = time.monotonic() + 30
    while processes.process("generator") is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "resuming" in (tmp_path / "gen.2.log").read_text()
    ids = sorted(r["id"] for r in read_all(broker.bootstrap_servers, broker.topics["input"]))
    assert ids == list(range(1, 6001))


def test_resume_point_skips_exactly_what_each_partition_holds():
    keys, partitions = 10, 3
    last = {p: None for p in range(partitions)}
    assert generator.resume_point(last, keys, partitions, 20) == list(range(1, 21))
    # partition of id 5 holds up to id 5; others hold nothing
    p5 = generator.partition_of(generator.key_of(5, keys), partitions)
    last[p5] = 5
    todo = generator.resume_point(last, keys, partitions, 20)
    assert 5 not in todo and all(i in todo for i in range(6, 21))
    assert [i for i in range(1, 5) if i not in todo] == \
        [i for i in range(1, 5) if generator.partition_of(generator.key_of(i, keys), partitions) == p5]


def test_phases_wait_for_their_step_and_produce_their_own_ids(broker, tmp_path):
    """A phase tied to a step produces nothing until the step's result file appears."""
    spec = generator.LoadSpec(broker.bootstrap_servers, broker.topics["input"], records=300, keys=7, phases=(
        generator.Phase(100, 1, at_s=0), generator.Phase(200, 101, rate=2000, after_step=1)))
    steps_dir = tmp_path / "program"
    steps_dir.mkdir()
    producing = threading.Thread(target=generator.produce, args=(spec, None, time.time(), steps_dir))
    producing.start()
    try:
        deadline, produced = time.monotonic() + 60, []
        while len(produced) < 100 and time.monotonic() < deadline:  # the first phase, however busy the machine
            time.sleep(0.5)
            produced = read_all(broker.bootstrap_servers, broker.topics["input"])
        time.sleep(1)
        assert sorted(r["id"] for r in read_all(broker.bootstrap_servers, broker.topics["input"])) == \
            list(range(1, 101)), "only the first phase may be produced before step 1"
        (steps_dir / "step-1.json").write_text("{}")
    finally:
        producing.join(30)
    assert sorted(r["id"] for r in read_all(broker.bootstrap_servers, broker.topics["input"])) == list(range(1, 301))


def test_chunk_values_are_the_contract_json_of_each_id():
    """Values are formatted without json.dumps for speed: they must still be exactly its output."""
    keys, partitions, payload = 7, 4, "AbcXyz09"
    records = generator.Records(keys, partitions, payload)
    ids = [1, 7, 8, 123456]
    for record_id, (key, partition, value) in zip(ids, records.chunk(ids, 1700000000123), strict=True):
        assert key == generator.key_of(record_id, keys)
        assert partition == generator.partition_of(key, partitions)
        assert value == json.dumps({"id": record_id, "key": key, "seq": generator.seq_of(record_id, keys),
                                    "payload": payload, "ts": 1700000000123})
